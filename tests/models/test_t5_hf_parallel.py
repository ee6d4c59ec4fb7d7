"""The T5 / MT5 Hugging Face fixtures under TP=2 and PP=2 (2 launched processes,
``t5_parallel_script.py``): logits within 1e-4 of transformers', greedy and beam-3 generation
equal to transformers' tokens, export equal to the fixture, biases placed by the layout."""
import json
import os

import pytest

from libai.utils.testing import launch

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("t5_parallel") / "results.json")
    proc = launch(os.path.join(HERE, "t5_parallel_script.py"), 2, args=[out], timeout=300, cwd=HERE)
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(out) as f:
        return json.load(f)


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
