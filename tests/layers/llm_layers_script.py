"""Launched with 2 processes: the T5 / Llama-style layer options under TP=2 against the same
layers built from the same seed in one process.

Usage: python -m oneflow.distributed.launch --nproc_per_node 2 llm_layers_script.py OUT.json
Writes {check: {"out": rel err, "grads": {param: rel err}, "init": {...}, ...}} from rank 0.
"""
import sys

import libai  # noqa: F401  (must precede oneflow)
import numpy as np

from parallel_helpers import (
    build_twice, compare_params, full, global_layout, like, loss_weights, place, rel_err,
    sbp_names, write_results,
)
from libai.layers import RotaryEmbedding, TransformerLayer

B, S, H, HEADS, D = 2, 5, 16, 4, 4
RNG = np.random.RandomState(11)
X = RNG.randn(B, S, H).astype(np.float32)
ENC = RNG.randn(B, S + 2, H).astype(np.float32)
SELF_BIAS = RNG.randn(1, HEADS, S, S).astype(np.float32)
CROSS_BIAS = RNG.randn(1, HEADS, S, S + 2).astype(np.float32)


def inputs(layout, array):
    import oneflow as flow

    return flow.tensor(array) if layout is None else place(array, layout)


def whole(layout, array):
    """A tensor replicated on stage 0 (how a model hands a shared position bias around)."""
    import oneflow as flow

    return flow.tensor(array) if layout is None else place(array, layout, split_batch=False)


def llama_block():
    return TransformerLayer(
        H, 24, HEADS, attn_mask_type="causal", activation="silu", normalization="rmsnorm",
        bias=False, gated_mlp=True, num_key_value_heads=2, layernorm_epsilon=1e-6,
        rotary_embedding=RotaryEmbedding(D),
    )


def t5_decoder_block():
    return TransformerLayer(
        H, 24, HEADS, is_decoder=True, attn_mask_type="causal", activation="gelu_new",
        normalization="rmsnorm", bias=False, gated_mlp=True, softmax_scale=1.0,
        layernorm_epsilon=1e-6,
    )


def run(layout, build, forward, seed):
    parallel, reference = build_twice(build, layout, seed)
    out_p, out_r = forward(parallel, layout), forward(reference, None)
    weights = loss_weights(out_r.shape, seed)
    (out_p * like(weights, out_p)).sum().backward()
    (out_r * like(weights, out_r)).sum().backward()
    return {
        "out": rel_err(full(out_p), out_r.numpy()),
        "grads": compare_params(parallel, reference, grads=True),
        "init": compare_params(parallel, reference, grads=False),
        "min_grad_norm": min(float(np.linalg.norm(p.grad.numpy())) for p in reference.parameters()),
        "out_sbp": sbp_names(out_p),
        "kv_weight_local": list(parallel.self_attention.key_value.weight.to_local().shape)
        if hasattr(parallel.self_attention, "key_value") else None,
    }


def main(out_path):
    layout = global_layout(tensor_parallel_size=2)
    results = {
        "tp2/llama_block": run(layout, llama_block, lambda m, l: m(inputs(l, X)), 0),
        "tp2/t5_decoder_block": run(
            layout, t5_decoder_block,
            lambda m, l: m(inputs(l, X), encoder_states=inputs(l, ENC),
                           position_bias=whole(l, SELF_BIAS),
                           encoder_decoder_position_bias=whole(l, CROSS_BIAS)),
            1,
        ),
    }
    write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1])
