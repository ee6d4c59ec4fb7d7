"""TransformerLayer wiring (pre/post norm, residual source, decoder), MLP, drop path, the
cross-entropy loss and the tied LM head, in one process."""
import numpy as np
import oneflow as flow
import pytest

from libai.layers import (
    MLP, LMLogits, ParallelCrossEntropyLoss, TransformerLayer, VocabEmbedding, drop_path,
)

H, FFN, HEADS = 8, 16, 2


def _x(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def _g(layout, array):
    """``array`` as the global tensor a layer makes of it (the test composes layers by hand)."""
    b = flow.sbp.broadcast
    return layout.to_global(flow.tensor(array), [b, b])


def test_mlp_is_two_linears_around_gelu(local_layout):
    mlp = MLP(H, FFN)
    x = _x(2, 3, H)
    w1, b1 = mlp.dense_h_to_4h.weight.numpy(), mlp.dense_h_to_4h.bias.numpy()
    w2, b2 = mlp.dense_4h_to_h.weight.numpy(), mlp.dense_4h_to_h.bias.numpy()
    inner = flow.nn.functional.gelu(flow.tensor(x @ w1.T + b1)).numpy()
    np.testing.assert_allclose(mlp(flow.tensor(x)).numpy(), inner @ w2.T + b2, rtol=1e-5, atol=1e-6)
    assert mlp.dense_h_to_4h.parallel == "col" and mlp.dense_4h_to_h.parallel == "row"


def test_fusion_flags_are_ignored_on_the_cpu(local_layout):
    mlp = MLP(H, FFN, bias_gelu_fusion=True, bias_dropout_fusion=True)
    assert not mlp.bias_gelu_fusion and not mlp.bias_dropout_fusion
    assert mlp(flow.tensor(_x(1, 2, H))).shape == (1, 2, H)


def test_pre_norm_encoder_layer_wiring(local_layout):
    layer = TransformerLayer(H, FFN, HEADS)
    x = _g(local_layout, _x(2, 4, H))
    h = x + layer.self_attention(layer.input_layernorm(x))
    expected = h + layer.mlp(layer.post_attention_layernorm(h))
    np.testing.assert_allclose(layer(x).numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_residual_from_the_normalised_input(local_layout):
    layer = TransformerLayer(H, FFN, HEADS, apply_residual_post_layernorm=True)
    x = _g(local_layout, _x(2, 4, H))
    normed = layer.input_layernorm(x)
    h = normed + layer.self_attention(normed)
    normed2 = layer.post_attention_layernorm(h)
    np.testing.assert_allclose(layer(x).numpy(), (normed2 + layer.mlp(normed2)).numpy(), rtol=1e-5, atol=1e-6)


def test_post_norm_encoder_layer_wiring(local_layout):
    layer = TransformerLayer(H, FFN, HEADS, layernorm_position="post")
    assert not hasattr(layer, "input_layernorm")
    x = _g(local_layout, _x(2, 4, H))
    h = layer.post_attention_layernorm(x + layer.self_attention(x))
    expected = layer.output_layernorm(h + layer.mlp(h))
    np.testing.assert_allclose(layer(x).numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_pre_norm_decoder_layer_wiring(local_layout):
    layer = TransformerLayer(H, FFN, HEADS, is_decoder=True, attn_mask_type="causal")
    x = _g(local_layout, _x(2, 4, H))
    enc = _g(local_layout, _x(2, 6, H, seed=1))
    enc_mask = _g(local_layout, np.array([[1] * 6, [1] * 4 + [0] * 2]))
    h = x + layer.self_attention(layer.input_layernorm(x))
    h = h + layer.cross_attention(layer.post_attention_layernorm(h), enc_mask, encoder_states=enc)
    expected = h + layer.mlp(layer.post_cross_attention_layernorm(h))
    out = layer(x, encoder_states=enc, encoder_attention_mask=enc_mask)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    assert layer.self_attention.attn_mask_type.value == "causal"
    assert layer.cross_attention.is_cross_attention


def test_decoder_needs_encoder_states(local_layout):
    layer = TransformerLayer(H, FFN, HEADS, is_decoder=True)
    with pytest.raises(ValueError, match="needs encoder_states"):
        layer(flow.tensor(_x(1, 2, H)))


def test_decoder_cache_matches_the_full_pass(local_layout):
    layer = TransformerLayer(H, FFN, HEADS, is_decoder=True, attn_mask_type="causal")
    x = flow.tensor(_x(1, 4, H))
    enc = flow.tensor(_x(1, 5, H, seed=2))
    full = layer(x, encoder_states=enc).numpy()
    first, past = layer(x[:, :3], encoder_states=enc, use_cache=True)
    assert len(past) == 4  # self key/value, cross key/value
    # the cached cross key/value stand in for the encoder states
    last, _ = layer(x[:, 3:], past_key_value=past, use_cache=True)
    np.testing.assert_allclose(np.concatenate([first.numpy(), last.numpy()], 1), full, rtol=1e-5, atol=1e-6)


def test_same_seed_same_layer(local_layout):
    def params(seed):
        flow.manual_seed(seed)
        return {k: v.numpy() for k, v in TransformerLayer(H, FFN, HEADS, is_decoder=True).named_parameters()}

    a, b, c = params(1), params(1), params(2)
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    assert not np.allclose(a["mlp.dense_h_to_4h.weight"], c["mlp.dense_h_to_4h.weight"])


def test_every_sublayer_records_the_block_index(local_layout):
    layer = TransformerLayer(H, FFN, HEADS, is_decoder=True, layer_idx=3)
    indices = {m.layer_idx for m in layer.modules() if hasattr(m, "layer_idx")}
    assert indices == {3}


def test_unknown_layernorm_position(local_layout):
    with pytest.raises(ValueError, match="layernorm_position='middle'"):
        TransformerLayer(H, FFN, HEADS, layernorm_position="middle")


def test_drop_path_zeroes_or_rescales_whole_samples():
    flow.manual_seed(0)
    x = flow.ones(64, 3, 4)
    out = drop_path(x, 0.5, training=True).numpy()
    per_sample = out.reshape(64, -1)
    assert set(np.unique(per_sample)) <= {0.0, 2.0}
    assert np.all(per_sample.min(1) == per_sample.max(1)), "a sample is kept or dropped whole"
    assert 0 < (per_sample[:, 0] == 0).sum() < 64
    np.testing.assert_array_equal(drop_path(x, 0.5, training=False).numpy(), x.numpy())


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_cross_entropy_matches_numpy_and_ignores_index(local_layout):
    logits = _x(2, 3, 7)
    target = np.array([[1, 6, -100], [0, 3, 2]])
    loss = ParallelCrossEntropyLoss()(flow.tensor(logits), flow.tensor(target)).numpy()
    logp = _log_softmax(logits)
    expected = np.zeros((2, 3), dtype=np.float32)
    for i in range(2):
        for j in range(3):
            if target[i, j] != -100:
                expected[i, j] = -logp[i, j, target[i, j]]
    np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-6)
    assert loss[0, 2] == 0.0


def test_cross_entropy_shape_mismatch(local_layout):
    with pytest.raises(ValueError, match=r"logits \[\.\.\., vocab\] and target"):
        ParallelCrossEntropyLoss()(flow.randn(2, 3, 5), flow.zeros(2, 4, dtype=flow.int64))


def test_lm_logits_tie_to_the_embedding(local_layout):
    emb = VocabEmbedding(11, H)
    head = LMLogits(11, bias=True)
    head.bias.data.copy_(_x(11, seed=5))
    h = _x(2, 3, H)
    expected = h @ emb.weight.numpy().T + _x(11, seed=5)
    np.testing.assert_allclose(head(flow.tensor(h), emb.weight).numpy(), expected, rtol=1e-5, atol=1e-5)
    head(flow.tensor(h), emb.weight).sum().backward()
    assert emb.weight.grad is not None and float(np.abs(emb.weight.grad.numpy()).sum()) > 0
    with pytest.raises(ValueError, match="vocab_size=12 but the embedding table has 11 rows"):
        LMLogits(12)(flow.tensor(h), emb.weight)
