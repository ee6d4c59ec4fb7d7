"""Launched with 2 processes: every libai layer under TP=2, attention under DP=2 and a pipeline
under PP=2,
compared with the same layers built from the same seed under a one-process layout; also the
T5 / Llama-style layer options of llm_layers_script.py (one launch for all of them).

Usage: python -m oneflow.distributed.launch --nproc_per_node 2 parallel_layers_script.py OUT.json
Writes {check: {"out": rel err, "grads": {param: rel err}, ...facts...}} from rank 0.
"""
import sys

import libai  # noqa: F401  (must precede oneflow)
import numpy as np
import oneflow as flow
from oneflow import nn

import llm_layers_script
from parallel_helpers import (
    build_twice, compare_params, full, global_layout, like, place, placement_ranks, run_pair,
    sbp_names, write_results,
)
from libai.layers import (
    MLP, LayerNorm, Linear, LMLogits, MultiheadAttention, ParallelCrossEntropyLoss,
    TransformerLayer, VocabEmbedding,
)
from libai.layers.utils import cumsum_keeping_split, split_like

B, S, H, V = 2, 6, 16, 32  # batch, sequence, hidden, vocabulary
RNG = np.random.RandomState(7)
X = RNG.randn(B, S, H).astype(np.float32)
ENC = RNG.randn(B, S + 2, H).astype(np.float32)
IDS = RNG.randint(0, V, size=(B, S)).astype(np.int64)
TARGET = RNG.randint(0, V, size=(B, S)).astype(np.int64)
TARGET[0, :2] = -100  # ignored positions
PAD = np.ones((B, S), dtype=np.int64)
PAD[1, -2:] = 0  # the second sample has two padding tokens


def inputs(layout, array, stage=0):
    if layout is None:
        return flow.tensor(array)
    return place(array, layout, stage)


class ColRow(nn.Module):
    def __init__(self):
        super().__init__()
        self.col = Linear(H, 4 * H, parallel="col")
        self.row = Linear(4 * H, H, parallel="row")
        self.data = Linear(H, H, parallel="data")

    def forward(self, x):
        self.col_out = self.col(x)
        return self.data(self.row(self.col_out))


class TiedHead(nn.Module):
    """Embedding -> LayerNorm -> tied logits -> cross entropy: the vocab-parallel path."""

    def __init__(self, last_idx=0):
        super().__init__()
        self.embed = VocabEmbedding(V, H, layer_idx=0)
        self.norm = LayerNorm(H, layer_idx=last_idx)
        self.head = LMLogits(V, bias=True, layer_idx=last_idx)
        self.loss = ParallelCrossEntropyLoss(layer_idx=last_idx)

    def forward(self, ids, target):
        self.logits = self.head(self.norm(self.embed(ids)), self.embed.weight)
        return self.loss(self.logits, target)


def tensor_parallel_checks(results):
    layout = global_layout(tensor_parallel_size=2)
    checks = {
        "linear": (ColRow, lambda m, l: m(inputs(l, X))),
        "embedding": (lambda: VocabEmbedding(V, H), lambda m, l: m(inputs(l, IDS))),
        "tied_head_loss": (TiedHead, lambda m, l: m(inputs(l, IDS), inputs(l, TARGET))),
        "layernorm_mlp": (
            lambda: nn.Sequential(LayerNorm(H), MLP(H, 4 * H)), lambda m, l: m(inputs(l, X))
        ),
        "causal_attention": (
            lambda: MultiheadAttention(H, 4, attn_mask_type="causal"),
            lambda m, l: m(inputs(l, X), inputs(l, PAD)),
        ),
        "cross_attention": (
            lambda: MultiheadAttention(H, 4, is_cross_attention=True),
            lambda m, l: m(inputs(l, X), encoder_states=inputs(l, ENC)),
        ),
        "decoder_layer": (
            lambda: TransformerLayer(H, 4 * H, 4, is_decoder=True, attn_mask_type="causal"),
            lambda m, l: m(inputs(l, X), encoder_states=inputs(l, ENC)),
        ),
    }
    for seed, (name, (build, forward)) in enumerate(checks.items()):
        parallel, reference = build_twice(build, layout, seed)
        seen = record_probs_sbp(parallel) if name == "causal_attention" else {}
        results[f"tp2/{name}"] = run_pair(parallel, reference, forward, layout, seed)
        results[f"tp2/{name}"].update(seen)
        results[f"tp2/{name}"]["init"] = compare_params(parallel, reference, grads=False)
        if name == "linear":
            results["tp2/linear"].update(
                col_weight_local=list(parallel.col.weight.to_local().shape),
                row_weight_local=list(parallel.row.weight.to_local().shape),
                col_out_sbp=sbp_names(parallel.col_out),
            )
        if name == "embedding":
            results["tp2/embedding"]["weight_local"] = list(parallel.weight.to_local().shape)
        if name == "tied_head_loss":
            results["tp2/tied_head_loss"]["logits_sbp"] = sbp_names(parallel.logits)


def record_probs_sbp(attention):
    """Make ``attention`` note the SBP of its softmax output in the returned dict."""
    seen = {}
    softmax = attention._masked_softmax

    def recording_softmax(*args):
        probs = softmax(*args)
        seen["probs_sbp"] = sbp_names(probs)
        return probs

    attention._masked_softmax = recording_softmax
    return seen


def data_parallel_checks(results):
    """DP=2 attention, causal alone and causal with padding: outputs and gradients equal the
    one-process ones, and the softmax's output stays split over the batch (a replicated causal
    mask used to make OneFlow replicate it, so every rank computed the whole batch)."""
    layout = global_layout(data_parallel_size=2)
    for seed, (name, mask) in enumerate([("causal", None), ("causal_padded", PAD)], start=40):
        parallel, reference = build_twice(
            lambda: MultiheadAttention(H, 4, attn_mask_type="causal"), layout, seed
        )
        seen = record_probs_sbp(parallel)

        def forward(m, l, mask=mask):
            return m(inputs(l, X)) if mask is None else m(inputs(l, X), inputs(l, mask))

        results[f"dp2/{name}_attention"] = run_pair(parallel, reference, forward, layout, seed)
        results[f"dp2/{name}_attention"]["probs_sbp"] = seen["probs_sbp"]
    split_helper_checks(results, layout)


def split_helper_checks(results, layout):
    """The helpers that keep data-parallel work split: ``cumsum_keeping_split`` (values equal
    to NumPy's running sum, batch still split, where OneFlow's own cumsum replicates it) and
    ``split_like`` (a replicated ``[1, 1, q, k]`` operand made batch-deep and split)."""
    counts = (IDS % 3 == 0).astype(np.int64)  # 0/1 rows like RoBERTa's "real token" flags
    placed = place(counts, layout)
    summed = cumsum_keeping_split(placed, dim=1)
    results["dp2/cumsum_keeping_split"] = {
        "equal": bool((full(summed) == np.cumsum(counts, axis=1)).all()),
        "sbp": sbp_names(summed),
        "oneflow_cumsum_sbp": sbp_names(flow.cumsum(placed, dim=1)),
    }
    scores = place(RNG.randn(B, 4, S, S).astype(np.float32), layout)
    causal = like(np.tril(np.ones((1, 1, S, S), dtype=np.float32)), scores)
    made = split_like(causal, scores)
    try:
        split_like(causal[0], scores)
        error = ""
    except ValueError as e:
        error = str(e)
    results["dp2/split_like"] = {
        "shape": list(made.shape), "sbp": sbp_names(made),
        "equal": bool((full(made) == np.tril(np.ones((B, 1, S, S)))).all()),
        "fill_sbp": sbp_names(scores.masked_fill(made == 0, -1.0)),
        "ndim_error": error,
    }


class TwoStages(nn.Module):
    """Embedding and block 0 on stage 0; block 1, norm, tied head and loss on stage 1."""

    def __init__(self):
        super().__init__()
        self.embed = VocabEmbedding(V, H, layer_idx=0)
        self.block0 = TransformerLayer(H, 4 * H, 4, attn_mask_type="causal", layer_idx=0)
        self.block1 = TransformerLayer(H, 4 * H, 4, attn_mask_type="causal", layer_idx=1)
        self.norm = LayerNorm(H, layer_idx=-1)
        self.head = LMLogits(V, layer_idx=-1)
        self.loss = ParallelCrossEntropyLoss(layer_idx=-1)

    def forward(self, ids, target):
        self.h0 = self.block0(self.embed(ids))
        logits = self.head(self.norm(self.block1(self.h0)), self.embed.weight)
        return self.loss(logits, target)


def pipeline_checks(results):
    layout = global_layout(pipeline_parallel_size=2, pipeline_num_layers=2)
    parallel, reference = build_twice(TwoStages, layout, seed=11)

    def forward(m, l):
        return m(inputs(l, IDS, stage=0), inputs(l, TARGET, stage=-1))

    out = run_pair(parallel, reference, forward, layout, seed=11)
    out.update(
        embed_ranks=placement_ranks(parallel.embed.weight),
        block1_ranks=placement_ranks(parallel.block1.mlp.dense_h_to_4h.weight),
        h0_ranks=placement_ranks(parallel.h0),
    )
    results["pp2/two_stages"] = out


def main():
    results = {}
    tensor_parallel_checks(results)
    llm_layers_script.tensor_parallel_checks(results)
    data_parallel_checks(results)
    pipeline_checks(results)
    write_results(results, sys.argv[1])


if __name__ == "__main__":
    main()
