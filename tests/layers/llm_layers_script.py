"""The T5 / Llama-style layer options under TP=2 against the same layers built from the same
seed in one process. parallel_layers_script.py runs these checks in its launch; alone:

    python -m oneflow.distributed.launch --nproc_per_node 2 llm_layers_script.py OUT.json

writes {check: {"out": rel err, "grads": {param: rel err}, "init": {...}, ...}} from rank 0.
"""
import sys

import libai  # noqa: F401  (must precede oneflow)
import numpy as np

from parallel_helpers import build_twice, compare_params, global_layout, place, run_pair, write_results
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
    result = run_pair(parallel, reference, forward, layout, seed)
    result["init"] = compare_params(parallel, reference, grads=False)
    attention = parallel.self_attention
    result["kv_weight_local"] = (list(attention.key_value.weight.to_local().shape)
                                 if hasattr(attention, "key_value") else None)
    return result


def tensor_parallel_checks(results):
    """Adds ``tp2/llama_block`` and ``tp2/t5_decoder_block`` to ``results``."""
    layout = global_layout(tensor_parallel_size=2)
    results["tp2/llama_block"] = run(layout, llama_block, lambda m, l: m(inputs(l, X)), 0)
    results["tp2/t5_decoder_block"] = run(
        layout, t5_decoder_block,
        lambda m, l: m(inputs(l, X), encoder_states=inputs(l, ENC),
                       position_bias=whole(l, SELF_BIAS),
                       encoder_decoder_position_bias=whole(l, CROSS_BIAS)),
        1,
    )


def main(out_path):
    results = {}
    tensor_parallel_checks(results)
    write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1])
