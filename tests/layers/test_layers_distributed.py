"""Layers under tensor parallel (TP=2), attention under data parallel (DP=2) and pipeline
parallel (PP=2), in 2 launched processes.

``parallel_layers_script.py`` builds each layer twice from one seed, under the parallel layout
and under a one-process layout, and reports relative errors (max |a - b| / max |b|) of outputs,
gradients and initial weights. Tolerance: 1e-5 relative (float32; tensor parallelism only
reorders sums). The same launch runs llm_layers_script.py's checks: a Llama-style block
(RMSNorm, rotary, grouped-query attention, SwiGLU, no biases) and a T5 v1.1 decoder block
(relative position biases on both attentions, unscaled scores, gated-GELU) under TP=2.
"""
import os

import pytest

from tests.launch_helpers import launched_results

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-5


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return launched_results(tmp_path_factory, os.path.join(HERE, "parallel_layers_script.py"))


TP_CHECKS = [
    "linear", "embedding", "tied_head_loss", "layernorm_mlp", "causal_attention",
    "cross_attention", "decoder_layer",
]


@pytest.mark.parametrize("name", TP_CHECKS)
def test_tensor_parallel_matches_one_process(results, name):
    check = results[f"tp2/{name}"]
    assert check["out"] < RTOL
    assert check["grads"], "no parameters were compared"
    assert check["min_grad_norm"] > 0, "a parameter got no gradient: the comparison is vacuous"
    bad = {k: v for k, v in check["grads"].items() if v >= RTOL}
    assert not bad, f"gradients differ: {bad}"
    assert max(check["init"].values()) == 0.0, "initial weights differ between layouts"
    assert check["out_ranks"] == [[0, 1]]


def test_column_and_row_linear_shard_their_weights(results):
    check = results["tp2/linear"]
    # Linear(16, 64, "col") keeps half of the 64 output rows; Linear(64, 16, "row") half of
    # the 64 input columns.
    assert check["col_weight_local"] == [32, 16]
    assert check["row_weight_local"] == [16, 32]
    assert check["col_out_sbp"][1] == "oneflow.sbp.split(dim=2)"
    assert check["out_sbp"][1] == "oneflow.sbp.broadcast"


def test_tensor_parallel_attention_keeps_the_heads_split_through_the_softmax(results):
    # replicated here would mean each rank computed the softmax of every head
    assert results["tp2/causal_attention"]["probs_sbp"][-1] == "oneflow.sbp.split(dim=1)"


def test_vocab_embedding_splits_vocabulary(results):
    assert results["tp2/embedding"]["weight_local"] == [16, 16]  # 32 rows over 2 ranks
    assert results["tp2/embedding"]["out_sbp"][1] == "oneflow.sbp.broadcast"


def test_lm_logits_stay_split_on_vocabulary(results):
    assert results["tp2/tied_head_loss"]["logits_sbp"][1] == "oneflow.sbp.split(dim=2)"


def test_pipeline_moves_activations_between_stages(results):
    check = results["pp2/two_stages"]
    assert check["embed_ranks"] == [[0]]
    assert check["h0_ranks"] == [[0]]
    assert check["block1_ranks"] == [[1]]
    assert check["out_ranks"] == [[1]]
    assert check["out"] < RTOL
    bad = {k: v for k, v in check["grads"].items() if v >= RTOL}
    assert not bad, f"gradients differ: {bad}"
    # the tied embedding lives on stage 0 but receives the LM head's gradient from stage 1
    assert "embed.weight" in check["grads"]


@pytest.mark.parametrize("name", ["causal", "causal_padded"])
def test_data_parallel_attention_keeps_the_batch_split_through_the_softmax(results, name):
    check = results[f"dp2/{name}_attention"]
    assert check["out"] < RTOL
    bad = {k: v for k, v in check["grads"].items() if v >= RTOL}
    assert not bad, f"gradients differ: {bad}"
    # replicated here would mean each rank computed the softmax of the whole batch
    assert check["probs_sbp"] == ["oneflow.sbp.split(dim=0)"]
    assert check["out_sbp"] == ["oneflow.sbp.split(dim=0)"]


def test_cumsum_keeping_split_keeps_the_batch_split(results):
    check = results["dp2/cumsum_keeping_split"]
    assert check["equal"]
    # OneFlow's own cumsum replicates its output (each rank would then hold the whole batch)
    assert check["oneflow_cumsum_sbp"] == ["oneflow.sbp.broadcast"]
    assert check["sbp"] == ["oneflow.sbp.split(dim=0)"]


def test_split_like_makes_a_replicated_operand_split_like_the_data(results):
    check = results["dp2/split_like"]
    assert check["shape"] == [2, 1, 6, 6] and check["equal"]
    assert check["sbp"] == check["fill_sbp"] == ["oneflow.sbp.split(dim=0)"]
    assert "as many dimensions" in check["ndim_error"]


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
