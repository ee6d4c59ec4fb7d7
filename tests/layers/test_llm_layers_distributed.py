"""A Llama-style block (RMSNorm, rotary, grouped-query attention, SwiGLU, no biases) and a
T5 v1.1 decoder block (relative position biases on both attentions, unscaled scores,
gated-GELU) under TP=2, against the same blocks in one process (2 launched processes,
``llm_layers_script.py``). Tolerance 1e-5 relative: tensor parallelism only reorders sums."""
import json
import os

import pytest

from libai.utils.testing import launch

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-5


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("llm_layers") / "results.json")
    proc = launch(os.path.join(HERE, "llm_layers_script.py"), 2, args=[out], timeout=300, cwd=HERE)
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(out) as f:
        return json.load(f)


@pytest.mark.parametrize("name", ["llama_block", "t5_decoder_block"])
def test_block_under_tp2_matches_one_process(results, name):
    check = results[f"tp2/{name}"]
    assert check["out"] < RTOL
    assert check["min_grad_norm"] > 0, "a parameter got no gradient: the comparison is vacuous"
    bad = {k: v for k, v in check["grads"].items() if v >= RTOL}
    assert not bad, f"gradients differ: {bad}"
    assert max(check["init"].values()) == 0.0


def test_grouped_key_value_heads_are_split_over_ranks(results):
    # 2 key/value heads of size 4, k and v each: 16 rows in all, 8 (one head) per rank
    assert results["tp2/llama_block"]["kv_weight_local"] == [8, 16]
