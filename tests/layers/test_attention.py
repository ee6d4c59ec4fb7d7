"""MultiheadAttention in one process: values against a NumPy reference, causal and padding
masks, the key/value cache and cross attention."""
import numpy as np
import oneflow as flow
import pytest

from libai.layers import MultiheadAttention
from tests.layers.numpy_reference import random_array as _x, softmax as _softmax

H, HEADS = 8, 2
D = H // HEADS


def _reference(attn, x, mask=None, causal=False):
    """Attention written out in NumPy from the layer's weights.

    The fused projection's output features are laid out per head as [q | k | v] blocks of
    ``D`` features (documented in libai.layers.attention).
    """
    w, b = attn.query_key_value.weight.numpy(), attn.query_key_value.bias.numpy()
    qkv = (x @ w.T + b).reshape(x.shape[0], x.shape[1], HEADS, 3, D)
    q, k, v = (qkv[:, :, :, i].transpose(0, 2, 1, 3) for i in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)
    allowed = np.ones(scores.shape, dtype=bool)
    if mask is not None:
        allowed &= mask[:, None, None, :].astype(bool)
    if causal:
        allowed &= np.tril(np.ones(scores.shape[-2:], dtype=bool))
    scores = np.where(allowed, scores, -10000.0)
    ctx = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(x.shape)
    return ctx @ attn.dense.weight.numpy().T + attn.dense.bias.numpy()


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_numpy_reference(local_layout, causal):
    attn = MultiheadAttention(H, HEADS, attn_mask_type="causal" if causal else "padding")
    x = _x(2, 5, H)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    out = attn(flow.tensor(x), flow.tensor(mask)).numpy()
    np.testing.assert_allclose(out, _reference(attn, x, mask, causal), rtol=1e-4, atol=1e-5)


def test_causal_attention_ignores_future_tokens(local_layout):
    attn = MultiheadAttention(H, HEADS, attn_mask_type="causal")
    x = _x(1, 6, H)
    changed = x.copy()
    changed[0, 4] += 5.0  # perturb position 4
    a = attn(flow.tensor(x)).numpy()
    b = attn(flow.tensor(changed)).numpy()
    np.testing.assert_array_equal(a[0, :4], b[0, :4])  # positions before 4 cannot see it
    assert not np.allclose(a[0, 4:], b[0, 4:])


def test_padding_mask_hides_padded_keys(local_layout):
    attn = MultiheadAttention(H, HEADS)
    x = _x(1, 5, H)
    mask = flow.tensor([[1, 1, 1, 0, 0]])
    changed = x.copy()
    changed[0, 3:] = -x[0, 3:]
    a = attn(flow.tensor(x), mask).numpy()
    b = attn(flow.tensor(changed), mask).numpy()
    np.testing.assert_array_equal(a[0, :3], b[0, :3])
    unmasked = attn(flow.tensor(changed)).numpy()
    assert not np.allclose(unmasked[0, :3], b[0, :3]), "without the mask the change must show"


def test_own_causal_mask_gives_the_same_bits_as_the_same_mask_given(local_layout):
    # alone, the layer's causal mask fills with -inf (every row keeps itself); a mask given by the
    # caller fills with -10000: the weights are the same exact zeros either way
    attn = MultiheadAttention(H, HEADS, attn_mask_type="causal")
    x = flow.tensor(_x(2, 6, H))
    own, given = attn(x), attn(x, flow.tensor(np.ones((2, 6), dtype=np.int64)))
    np.testing.assert_array_equal(own.numpy(), given.numpy())
    grad_own = flow.autograd.grad(own.sum(), attn.query_key_value.weight)[0].numpy()
    grad_given = flow.autograd.grad(given.sum(), attn.query_key_value.weight)[0].numpy()
    np.testing.assert_array_equal(grad_own, grad_given)


def test_a_query_with_no_visible_key_stays_finite(local_layout):
    # left padding under the causal mask: the first query of row 1 sees only padding, so every
    # key of that query is masked; its weights are uniform, not NaN, and the other rows are exact
    attn = MultiheadAttention(H, HEADS, attn_mask_type="causal")
    x = _x(2, 4, H)
    mask = np.array([[1, 1, 1, 1], [0, 1, 1, 1]])
    out = attn(flow.tensor(x), flow.tensor(mask)).numpy()
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, _reference(attn, x, mask, causal=True), rtol=1e-4, atol=1e-5)


def test_three_and_four_dim_masks_are_equivalent(local_layout):
    attn = MultiheadAttention(H, HEADS)
    x = flow.tensor(_x(2, 4, H))
    mask3 = np.tril(np.ones((4, 4), dtype=np.int64))[None].repeat(2, 0)
    a = attn(x, flow.tensor(mask3)).numpy()
    b = attn(x, flow.tensor(mask3[:, None].astype(bool))).numpy()
    np.testing.assert_array_equal(a, b)


def test_kv_cache_reproduces_the_full_causal_pass(local_layout):
    attn = MultiheadAttention(H, HEADS, attn_mask_type="causal")
    x = flow.tensor(_x(2, 5, H))
    full = attn(x).numpy()
    out, past = attn(x[:, :3], use_cache=True)
    steps = [out.numpy()]
    for t in range(3, 5):
        out, past = attn(x[:, t:t + 1], past_key_value=past, use_cache=True)
        steps.append(out.numpy())
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, rtol=1e-5, atol=1e-6)
    assert past[0].shape == (2, HEADS, 5, D)


def test_cross_attention_reads_encoder_states(local_layout):
    attn = MultiheadAttention(H, HEADS, is_cross_attention=True)
    x = flow.tensor(_x(2, 3, H))
    enc = _x(2, 7, H, seed=1)
    a = attn(x, encoder_states=flow.tensor(enc)).numpy()
    assert a.shape == (2, 3, H)
    b = attn(x, encoder_states=flow.tensor(enc * 2)).numpy()
    assert not np.allclose(a, b)
    # masking encoder position 6 makes it irrelevant
    mask = flow.tensor(np.array([[1] * 6 + [0]] * 2))
    changed = enc.copy()
    changed[:, 6] += 3.0
    np.testing.assert_array_equal(
        attn(x, mask, encoder_states=flow.tensor(enc)).numpy(),
        attn(x, mask, encoder_states=flow.tensor(changed)).numpy(),
    )


def test_cross_attention_without_encoder_states_is_an_error(local_layout):
    attn = MultiheadAttention(H, HEADS, is_cross_attention=True)
    with pytest.raises(ValueError, match="cross attention needs encoder_states"):
        attn(flow.tensor(_x(1, 2, H)))


def test_query_key_layer_scaling_leaves_fp32_results_unchanged(local_layout):
    flow.manual_seed(0)
    plain = MultiheadAttention(H, HEADS, layer_idx=3)
    flow.manual_seed(0)
    scaled = MultiheadAttention(H, HEADS, apply_query_key_layer_scaling=True, layer_idx=3)
    x = flow.tensor(_x(2, 4, H))
    np.testing.assert_allclose(scaled(x).numpy(), plain(x).numpy(), rtol=1e-5, atol=1e-6)


def test_bad_configurations_are_reported(local_layout):
    with pytest.raises(ValueError, match="hidden_size=10 is not divisible by num_attention_heads=4"):
        MultiheadAttention(10, 4)
    with pytest.raises(ValueError, match="attn_mask_type='future'.*'padding' or 'causal'"):
        MultiheadAttention(H, HEADS, attn_mask_type="future")
    attn = MultiheadAttention(H, HEADS)
    with pytest.raises(ValueError, match="does not fit 3 queries and 3 keys"):
        attn(flow.tensor(_x(1, 3, H)), flow.ones(1, 4))


def test_cached_single_query_skips_the_causal_mask_and_keeps_padding(local_layout, monkeypatch):
    """A one-query decoding step sees every key, so the causal mask (all true) is not built;
    the padding mask still applies and the steps reproduce the full masked pass."""
    attn = MultiheadAttention(H, HEADS, attn_mask_type="causal")
    x = flow.tensor(_x(2, 5, H))
    mask = flow.tensor(np.array([[0, 1, 1, 1, 1], [0, 0, 1, 1, 1]]))
    full = attn(x, mask).numpy()
    out, past = attn(x[:, :3], mask[:, :3], use_cache=True)
    steps = [out.numpy()]

    def no_causal_mask(*args):
        raise AssertionError("the causal mask was built for a single query")

    monkeypatch.setattr(attn, "_causal_mask", no_causal_mask)
    for t in range(3, 5):
        out, past = attn(x[:, t:t + 1], mask[:, :t + 1], past_key_value=past, use_cache=True)
        steps.append(out.numpy())
    got = np.concatenate(steps, axis=1)
    # rows' fully padded leading positions attend to nothing real; compare the real ones
    np.testing.assert_allclose(got[0, 1:], full[0, 1:], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1, 2:], full[1, 2:], rtol=1e-5, atol=1e-6)
