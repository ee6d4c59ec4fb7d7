"""The T5 / Llama-style layer options in one process, each against a NumPy reference written
from the formula: RMSLayerNorm, rotary embeddings (Hugging Face's rotate_half convention),
the gated MLP, grouped-query attention, softmax_scale, head_size and position_bias."""
import math

import numpy as np
import oneflow as flow
import pytest

from libai.layers import (
    MLP, MultiheadAttention, RMSLayerNorm, RMSNorm, RotaryEmbedding, TransformerLayer,
)
from tests.layers.numpy_reference import random_array as _x, softmax as _softmax


def _set(param, array):
    with flow.no_grad():
        param.copy_(np.asarray(array, dtype=np.float32))


# ----------------------------------------------------------------------------- RMSLayerNorm
def test_rms_layer_norm_matches_numpy(local_layout):
    norm = RMSLayerNorm(6, eps=1e-6)
    weight = _x(6, seed=1)
    _set(norm.weight, weight)
    x = _x(2, 3, 6) * 3 + 1.5  # a non-zero mean: RMS norm must not subtract it
    expected = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * weight
    np.testing.assert_allclose(norm(flow.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert RMSNorm is RMSLayerNorm
    assert [name for name, _ in norm.named_parameters()] == ["weight"]  # no bias


def test_rms_layer_norm_eps_matters_for_tiny_inputs(local_layout):
    x = flow.tensor(np.full((1, 4), 1e-3, dtype=np.float32))
    plain = RMSLayerNorm(4, eps=1e-12)(x).numpy()
    damped = RMSLayerNorm(4, eps=1e-2)(x).numpy()
    np.testing.assert_allclose(plain, 1.0, rtol=1e-4)
    np.testing.assert_allclose(damped, 1e-3 / math.sqrt(1e-6 + 1e-2), rtol=1e-4)


# ----------------------------------------------------------------------------- rotary
def _rope_numpy(x, positions, base=10000.0):
    """Hugging Face Llama's formula: x*cos + rotate_half(x)*sin, halves paired."""
    d = x.shape[-1]
    inv_freq = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.outer(positions, inv_freq)
    emb = np.concatenate([angles, angles], -1)
    rotated = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * np.cos(emb) + rotated * np.sin(emb)


@pytest.mark.parametrize("offset", [0, 5])
def test_rotary_matches_rotate_half_formula(local_layout, offset):
    rope = RotaryEmbedding(8, max_position_embeddings=16, base=10000.0)
    q, k = _x(2, 3, 4, 8, seed=1), _x(2, 3, 4, 8, seed=2)
    rq, rk = rope(flow.tensor(q), flow.tensor(k), position_offset=offset)
    positions = np.arange(offset, offset + 4)
    np.testing.assert_allclose(rq.numpy(), _rope_numpy(q, positions), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rk.numpy(), _rope_numpy(k, positions), rtol=1e-5, atol=1e-5)


def test_rotary_extends_past_its_table_and_keeps_norms(local_layout):
    rope = RotaryEmbedding(4, max_position_embeddings=2, base=100.0)
    q = _x(1, 1, 6, 4)
    rq, _ = rope(flow.tensor(q), flow.tensor(q))
    expected = _rope_numpy(q, np.arange(6), 100.0)
    np.testing.assert_allclose(rq.numpy(), expected, rtol=1e-5, atol=1e-5)
    # a rotation keeps each pair's length
    norms = np.linalg.norm(rq.numpy(), axis=-1)
    np.testing.assert_allclose(norms, np.linalg.norm(q, axis=-1), rtol=1e-5)


def test_rotary_refuses_odd_head_size(local_layout):
    with pytest.raises(ValueError, match="even head_size"):
        RotaryEmbedding(5)


# ----------------------------------------------------------------------------- gated MLP
@pytest.mark.parametrize("activation,act", [
    ("silu", lambda z: z / (1 + np.exp(-z))),
    ("gelu_new", lambda z: 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))),
])
def test_gated_mlp_matches_numpy(local_layout, activation, act):
    mlp = MLP(6, 10, activation=activation, gated=True, bias=False)
    names = sorted(name for name, _ in mlp.named_parameters())
    assert names == ["dense_4h_to_h.weight", "dense_h_to_4h.weight", "dense_h_to_4h_linear.weight"]
    x = _x(2, 3, 6)
    gate, up = mlp.dense_h_to_4h.weight.numpy(), mlp.dense_h_to_4h_linear.weight.numpy()
    down = mlp.dense_4h_to_h.weight.numpy()
    expected = (act(x @ gate.T) * (x @ up.T)) @ down.T
    np.testing.assert_allclose(mlp(flow.tensor(x)).numpy(), expected, rtol=1e-4, atol=1e-5)


def test_ungated_mlp_keeps_its_parameters(local_layout):
    names = sorted(name for name, _ in MLP(4, 8).named_parameters())
    assert names == ["dense_4h_to_h.bias", "dense_4h_to_h.weight",
                     "dense_h_to_4h.bias", "dense_h_to_4h.weight"]


# ----------------------------------------------------------------------------- attention
H, HEADS, D = 16, 4, 4


def _split_kv(attn, x, kv_heads):
    """k and v ``[b, kv_heads, s, d]`` from the per-head ``[kv_heads, 2, d]`` key_value rows."""
    kv = x @ attn.key_value.weight.numpy().T
    kv = kv.reshape(x.shape[0], x.shape[1], kv_heads, 2, D)
    return kv[:, :, :, 0].transpose(0, 2, 1, 3), kv[:, :, :, 1].transpose(0, 2, 1, 3)


def _attend(q, k, v, scale, bias=None, causal=False):
    scores = q @ k.transpose(0, 1, 3, 2) * scale
    if bias is not None:
        scores = scores + bias
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -10000.0)
    return _softmax(scores) @ v


def test_gqa_matches_numpy_grouped_reference(local_layout):
    attn = MultiheadAttention(H, HEADS, num_key_value_heads=2, bias=False, attn_mask_type="causal")
    assert attn.key_value.weight.shape == (2 * 2 * D, H)
    x = _x(2, 5, H)
    q = (x @ attn.query.weight.numpy().T).reshape(2, 5, HEADS, D).transpose(0, 2, 1, 3)
    k, v = _split_kv(attn, x, 2)
    k, v = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)  # query heads 0,1 -> kv 0; 2,3 -> kv 1
    ctx = _attend(q, k, v, 1 / np.sqrt(D), causal=True).transpose(0, 2, 1, 3).reshape(2, 5, H)
    expected = ctx @ attn.dense.weight.numpy().T
    np.testing.assert_allclose(attn(flow.tensor(x)).numpy(), expected, rtol=1e-4, atol=1e-5)


def test_gqa_equals_mha_with_repeated_key_value_weights(local_layout):
    gqa = MultiheadAttention(H, HEADS, num_key_value_heads=2, attn_mask_type="causal")
    mha = MultiheadAttention(H, HEADS, num_key_value_heads=HEADS, attn_mask_type="causal")
    kv_rows = gqa.key_value.weight.numpy().reshape(2, 2 * D, H)
    kv_bias = gqa.key_value.bias.numpy().reshape(2, 2 * D)
    for name in ("query.weight", "query.bias", "dense.weight", "dense.bias"):
        _set(dict(mha.named_parameters())[name], dict(gqa.named_parameters())[name].numpy())
    _set(mha.key_value.weight, np.repeat(kv_rows, 2, axis=0).reshape(2 * HEADS * D, H))
    _set(mha.key_value.bias, np.repeat(kv_bias, 2, axis=0).reshape(-1))
    x = flow.tensor(_x(2, 5, H))
    np.testing.assert_allclose(gqa(x).numpy(), mha(x).numpy(), rtol=1e-5, atol=1e-6)


def test_gqa_multiplies_each_key_value_head_by_its_group(local_layout, monkeypatch):
    """The query heads of a group are stacked as the rows of one product with their shared
    key/value head (no repeated copy of keys, values or the cache), on global tensors
    (training) and local ones (decoding): prompt and cached steps must give what the repeated
    heads give (the numpy reference)."""
    from libai.layers import attention as attention_module
    from libai.layers.utils import local_tensors

    attn = MultiheadAttention(H, HEADS, num_key_value_heads=2, bias=False, attn_mask_type="causal")
    grouped = []
    original = attention_module.MultiheadAttention._in_groups
    monkeypatch.setattr(attention_module.MultiheadAttention, "_in_groups",
                        lambda self, a, b, **kw: grouped.append(tuple(a.shape)) or original(self, a, b, **kw))
    x = _x(2, 5, H)
    q = (x @ attn.query.weight.numpy().T).reshape(2, 5, HEADS, D).transpose(0, 2, 1, 3)
    k, v = _split_kv(attn, x, 2)
    k, v = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
    ctx = _attend(q, k, v, 1 / np.sqrt(D), causal=True).transpose(0, 2, 1, 3).reshape(2, 5, H)
    expected = ctx @ attn.dense.weight.numpy().T
    with local_tensors(attn):
        prompt, cache = attn(flow.tensor(x[:, :4]), use_cache=True)
        step, _ = attn(flow.tensor(x[:, 4:]), past_key_value=cache, use_cache=True)
    assert grouped == [(2, HEADS, 4, D), (2, HEADS, 4, 4), (2, HEADS, 1, D), (2, HEADS, 1, 5)]
    np.testing.assert_allclose(np.concatenate([prompt.numpy(), step.numpy()], 1), expected,
                               rtol=1e-4, atol=1e-5)
    grouped.clear()
    out = attn(flow.tensor(x))
    assert out.is_global and grouped == [(2, HEADS, 5, D), (2, HEADS, 5, 5)]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)


def test_gqa_gradients_equal_those_of_repeated_heads(local_layout):
    """Training takes the grouped products too: the projections' gradients must equal those of
    the formulation that repeats each key/value head for its group (written here with local
    OneFlow ops, repeat_interleave on the head dim)."""
    attn = MultiheadAttention(H, HEADS, num_key_value_heads=2, bias=False, attn_mask_type="causal")
    x, weights = _x(2, 5, H), _x(2, 5, H, seed=7)
    out = attn(flow.tensor(x))
    (out * flow.tensor(weights).to_global(placement=out.placement, sbp=out.sbp)).sum().backward()

    params = {name: flow.tensor(p.numpy(), requires_grad=True) for name, p in
              (("query", attn.query.weight), ("key_value", attn.key_value.weight),
               ("dense", attn.dense.weight))}
    xl = flow.tensor(x)
    ql = flow.matmul(xl, params["query"], transpose_b=True).view(2, 5, HEADS, D).permute(0, 2, 1, 3)
    kv = flow.matmul(xl, params["key_value"], transpose_b=True).view(2, 5, 2, 2, D)
    kl, vl = (kv[:, :, :, i].permute(0, 2, 1, 3).repeat_interleave(2, dim=1) for i in range(2))
    scores = flow.matmul(ql, kl, transpose_b=True) / np.sqrt(D)
    scores = scores + flow.tensor(np.triu(np.full((5, 5), -1e9, np.float32), 1))
    ctx = flow.matmul(flow.softmax(scores, dim=-1), vl).permute(0, 2, 1, 3).reshape(2, 5, H)
    (flow.matmul(ctx, params["dense"], transpose_b=True) * flow.tensor(weights)).sum().backward()
    for name, reference in params.items():
        got = getattr(attn, name).weight.grad
        assert got is not None, name
        np.testing.assert_allclose(got.numpy(), reference.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


def test_gqa_refuses_a_count_that_does_not_divide_heads(local_layout):
    with pytest.raises(ValueError, match="must divide num_attention_heads=4"):
        MultiheadAttention(H, HEADS, num_key_value_heads=3)


def test_position_bias_is_added_to_scaled_scores(local_layout):
    attn = MultiheadAttention(H, HEADS, softmax_scale=1.0)
    x = _x(1, 3, H)
    bias = _x(1, HEADS, 3, 3, seed=4) * 2
    qkv = (x @ attn.query_key_value.weight.numpy().T + attn.query_key_value.bias.numpy())
    qkv = qkv.reshape(1, 3, HEADS, 3, D)
    q, k, v = (qkv[:, :, :, i].transpose(0, 2, 1, 3) for i in range(3))
    ctx = _attend(q, k, v, 1.0, bias).transpose(0, 2, 1, 3).reshape(1, 3, H)
    expected = ctx @ attn.dense.weight.numpy().T + attn.dense.bias.numpy()
    out = attn(flow.tensor(x), position_bias=flow.tensor(bias)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    # a huge bias on one key makes every query copy that key's value
    one_key = np.zeros((1, HEADS, 3, 3), np.float32)
    one_key[..., 1] = 1e4
    ctx = np.repeat(v[:, :, 1:2], 3, axis=2).transpose(0, 2, 1, 3).reshape(1, 3, H)
    expected = ctx @ attn.dense.weight.numpy().T + attn.dense.bias.numpy()
    out = attn(flow.tensor(x), position_bias=flow.tensor(one_key)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_head_size_decouples_inner_width(local_layout):
    attn = MultiheadAttention(8, 3, head_size=4, bias=False, softmax_scale=1.0)
    assert attn.query_key_value.weight.shape == (36, 8)
    assert attn.dense.weight.shape == (8, 12)
    x = _x(2, 4, 8)
    qkv = (x @ attn.query_key_value.weight.numpy().T).reshape(2, 4, 3, 3, 4)
    q, k, v = (qkv[:, :, :, i].transpose(0, 2, 1, 3) for i in range(3))
    ctx = _attend(q, k, v, 1.0).transpose(0, 2, 1, 3).reshape(2, 4, 12)
    np.testing.assert_allclose(
        attn(flow.tensor(x)).numpy(), ctx @ attn.dense.weight.numpy().T, rtol=1e-4, atol=1e-5
    )


def test_rotary_attention_cache_equals_full_sequence(local_layout):
    rope = RotaryEmbedding(D, max_position_embeddings=4)
    attn = MultiheadAttention(H, HEADS, num_key_value_heads=2, attn_mask_type="causal",
                              rotary_embedding=rope, bias=False)
    x = flow.tensor(_x(1, 6, H))
    full = attn(x).numpy()
    out, cache = attn(x[:, :4], use_cache=True)
    assert cache[0].shape == (1, 2, 4, D)  # the cache keeps the key/value heads only
    steps = [out.numpy()]
    for t in (4, 5):
        out, cache = attn(x[:, t:t + 1], past_key_value=cache, use_cache=True)
        steps.append(out.numpy())
    np.testing.assert_allclose(np.concatenate(steps, 1), full, rtol=1e-4, atol=1e-5)


def test_rotary_queries_and_keys_match_numpy(local_layout):
    rope = RotaryEmbedding(D)
    attn = MultiheadAttention(H, HEADS, num_key_value_heads=HEADS, rotary_embedding=rope,
                              attn_mask_type="causal", bias=False)
    x = _x(1, 5, H)
    q = (x @ attn.query.weight.numpy().T).reshape(1, 5, HEADS, D).transpose(0, 2, 1, 3)
    k, v = _split_kv(attn, x, HEADS)
    pos = np.arange(5)
    ctx = _attend(_rope_numpy(q, pos), _rope_numpy(k, pos), v, 1 / np.sqrt(D), causal=True)
    expected = ctx.transpose(0, 2, 1, 3).reshape(1, 5, H) @ attn.dense.weight.numpy().T
    np.testing.assert_allclose(attn(flow.tensor(x)).numpy(), expected, rtol=1e-4, atol=1e-5)


def test_cross_attention_refuses_rotary(local_layout):
    with pytest.raises(ValueError, match="self attention only"):
        MultiheadAttention(H, HEADS, is_cross_attention=True, rotary_embedding=RotaryEmbedding(D))


# ----------------------------------------------------------------------------- block
def test_llama_style_block_matches_numpy(local_layout):
    rope = RotaryEmbedding(D)
    block = TransformerLayer(
        H, 24, HEADS, layernorm_epsilon=1e-6, attn_mask_type="causal", activation="silu",
        normalization="rmsnorm", bias=False, gated_mlp=True, num_key_value_heads=2,
        rotary_embedding=rope,
    )
    params = dict(block.named_parameters())
    assert not any(name.endswith("bias") for name in params)
    for name in ("input_layernorm.weight", "post_attention_layernorm.weight"):
        _set(params[name], 1 + 0.1 * _x(H, seed=len(name)))
    x = _x(2, 5, H)

    def rms(z, w):
        return z / np.sqrt((z ** 2).mean(-1, keepdims=True) + 1e-6) * w

    attn = block.self_attention
    h = rms(x, params["input_layernorm.weight"].numpy())
    q = (h @ attn.query.weight.numpy().T).reshape(2, 5, HEADS, D).transpose(0, 2, 1, 3)
    k, v = _split_kv(attn, h, 2)
    pos = np.arange(5)
    k, v = np.repeat(_rope_numpy(k, pos), 2, 1), np.repeat(v, 2, 1)
    ctx = _attend(_rope_numpy(q, pos), k, v, 1 / np.sqrt(D), causal=True)
    x = x + ctx.transpose(0, 2, 1, 3).reshape(2, 5, H) @ attn.dense.weight.numpy().T
    h = rms(x, params["post_attention_layernorm.weight"].numpy())
    mlp = block.mlp
    gate = h @ mlp.dense_h_to_4h.weight.numpy().T
    inner = gate / (1 + np.exp(-gate)) * (h @ mlp.dense_h_to_4h_linear.weight.numpy().T)
    expected = x + inner @ mlp.dense_4h_to_h.weight.numpy().T
    out = block(flow.tensor(_x(2, 5, H))).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_block_passes_position_biases_to_both_attentions(local_layout):
    block = TransformerLayer(H, 24, HEADS, is_decoder=True, normalization="rmsnorm",
                             bias=False, softmax_scale=1.0)
    x, enc = flow.tensor(_x(1, 3, H)), flow.tensor(_x(1, 4, H, seed=1))
    base = block(x, encoder_states=enc).numpy()
    zero_self = flow.zeros(1, HEADS, 3, 3)
    zero_cross = flow.zeros(1, HEADS, 3, 4)
    same = block(x, encoder_states=enc, position_bias=zero_self,
                 encoder_decoder_position_bias=zero_cross).numpy()
    np.testing.assert_allclose(same, base, rtol=1e-6, atol=1e-6)
    moved_self = block(x, encoder_states=enc, position_bias=flow.tensor(_x(1, HEADS, 3, 3))).numpy()
    moved_cross = block(x, encoder_states=enc,
                        encoder_decoder_position_bias=flow.tensor(_x(1, HEADS, 3, 4))).numpy()
    assert not np.allclose(moved_self, base) and not np.allclose(moved_cross, base)
    assert not np.allclose(moved_self, moved_cross)


def test_block_refuses_unknown_normalization(local_layout):
    with pytest.raises(ValueError, match="normalization='batchnorm'"):
        TransformerLayer(H, 24, HEADS, normalization="batchnorm")
