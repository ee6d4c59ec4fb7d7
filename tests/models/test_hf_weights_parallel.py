"""Hugging Face fixtures loaded under tensor and pipeline parallelism (one 2-process launch for
every family): the logits equal transformers' reference as in one process, each rank holds
only its shard (half the rows of a column-parallel weight under TP=2; a pipeline stage's
weights only on its rank under PP=2), and save_pretrained gathers the shards back into
exactly the fixture's tensors. T5 / MT5 (t5_parallel_script.py, in the same launch) also
generate: greedy and beam-3 tokens equal transformers'."""
import os

import pytest

from tests.launch_helpers import launched_results

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = ["gpt2", "bert", "bert_classifier", "vit", "swin", "roberta", "swinv2", "llama",
            "qwen2", "mistral", "qwen3", "gemma", "phi3"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return launched_results(tmp_path_factory, os.path.join(HERE, "hf_parallel_script.py"))


@pytest.mark.parametrize("layout", ["tp2", "pp2"])
@pytest.mark.parametrize("fixture", FIXTURES)
def test_parallel_load_matches_reference_and_exports_the_fixture(results, layout, fixture):
    r = results[f"{layout}/{fixture}"]
    assert r["max_abs_diff"] < 1e-4
    assert r["export_names_equal"] and r["export_max_abs_diff"] == 0.0


@pytest.mark.parametrize("fixture", FIXTURES)
def test_tensor_parallel_ranks_hold_half_of_a_split_weight(results, fixture):
    r = results[f"tp2/{fixture}"]
    assert r["rows_per_rank"] == [r["full_rows"] // 2] * 2


@pytest.mark.parametrize("fixture", FIXTURES)
def test_pipeline_stage_weights_live_on_one_rank(results, fixture):
    rows = results[f"pp2/{fixture}"]["rows_per_rank"]
    assert sorted(rows) == [-1, results[f"pp2/{fixture}"]["full_rows"]]


@pytest.mark.parametrize("fixture", ["t5", "mt5"])
@pytest.mark.parametrize("layout", ["tp2", "pp2"])
def test_parallel_t5_matches_transformers(results, layout, fixture):
    check = results[f"{layout}/{fixture}"]
    assert check["max_abs_diff"] < 1e-4
    assert check["greedy_equal"] and check["beam3_equal"]
    assert check["export_names_equal"] and check["export_max_abs_diff"] == 0.0


def test_tensor_parallel_splits_heads_and_pipeline_places_the_decoder_bias(results):
    assert results["tp2/t5"]["qkv_sbp"][-1] == "oneflow.sbp.split(dim=0)"
    assert results["tp2/t5"]["decoder_bias_ranks"] == [0, 1]
    # 2 encoder + 2 decoder blocks over 2 stages: the first decoder block is on stage 1
    assert results["pp2/t5"]["decoder_bias_ranks"] == [1]
