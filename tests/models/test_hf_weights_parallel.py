"""Hugging Face fixtures loaded under tensor and pipeline parallelism (one 2-process launch for
every family): the logits equal transformers' reference as in one process, each rank holds
only its shard (half the rows of a column-parallel weight under TP=2; a pipeline stage's
weights only on its rank under PP=2), and save_pretrained gathers the shards back into
exactly the fixture's tensors."""
import json
import os

import pytest

from libai.utils.testing import launch

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = ["gpt2", "bert", "bert_classifier", "vit", "swin", "roberta", "swinv2", "llama"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("hf_parallel") / "results.json")
    proc = launch(os.path.join(HERE, "hf_parallel_script.py"), 2, args=[out], timeout=300, cwd=HERE)
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(out) as f:
        return json.load(f)


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
