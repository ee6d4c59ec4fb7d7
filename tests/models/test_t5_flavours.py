"""libai's T5 options for Google's flavours (T5, T5 v1.1, MT5) and the size presets: the
relative position buckets against hand-computed tables, the bias shared by a stack, the
defaults left as LiBai's T5, and preset sizes against the released models' parameter counts."""
import numpy as np
import oneflow as flow
import pytest

from libai.models import T5ForPreTraining, T5Model
from libai.models.t5_position_bias import RelativePositionBias, relative_position_bucket
from configs.common.models import t5 as presets

TINY = dict(vocab_size=40, hidden_size=16, hidden_layers=2, decoder_layers=2,
            num_attention_heads=2, intermediate_size=24)
GOOGLE = dict(position_embedding_type="relative", relative_attention_num_buckets=8,
              relative_attention_max_distance=20, softmax_scale=1.0, normalization="rmsnorm",
              linear_bias=False, initializer_range=0.5)


# ---------------------------------------------------------------------------- buckets
def test_bidirectional_buckets_by_hand():
    # 8 buckets -> 4 per direction, exact below 2, then 2 + floor(log(d/2)/log(10)*2), max 3;
    # keys after the query (positive distance) use buckets 4..7
    distances = np.array([-30, -7, -5, -2, -1, 0, 1, 2, 5, 7, 30])
    expected = np.array([3, 3, 2, 2, 1, 0, 5, 6, 6, 7, 7])
    np.testing.assert_array_equal(relative_position_bucket(distances, True, 8, 20), expected)


def test_causal_buckets_by_hand():
    # 8 buckets, one direction: exact below 4, then 4 + floor(log(d/4)/log(5)*4), max 7;
    # keys after the query all land in bucket 0
    distances = np.array([5, 1, 0, -1, -3, -4, -6, -9, -13, -19, -20, -100])
    expected = np.array([0, 0, 0, 1, 3, 4, 5, 6, 6, 7, 7, 7])
    np.testing.assert_array_equal(relative_position_bucket(distances, False, 8, 20), expected)


def test_bias_of_cached_queries_is_the_last_rows_of_the_full_bias(local_layout):
    bias = RelativePositionBias(8, 20, num_heads=3, bidirectional=False)
    full = bias(6, 6).numpy()
    assert full.shape == (1, 3, 6, 6)
    np.testing.assert_array_equal(bias(2, 6, past_length=4).numpy(), full[:, :, 4:])
    table = bias.relative_attention_bias.weight.numpy()
    np.testing.assert_array_equal(full[0, :, 5, 2], table[relative_position_bucket(-3, False, 8, 20)])


# ---------------------------------------------------------------------------- model options
def test_defaults_stay_libai_flavour(local_layout):
    model = T5Model(**TINY)
    names = {n for n, _ in model.named_parameters()}
    assert "embeddings.position_embeddings.weight" in names
    assert "encoder.layers.0.self_attention.query_key_value.bias" in names
    assert not any("position_bias" in n for n in names)
    layer = model.encoder.layers[0]
    assert type(layer.input_layernorm).__name__ == "LayerNorm"
    assert layer.self_attention.softmax_scale is None and not layer.mlp.gated


def test_relative_bias_lives_in_the_first_block_of_each_stack_and_is_shared(local_layout):
    model = T5Model(**TINY, **GOOGLE, gated_mlp=True, activation="gelu_new",
                    tie_word_embeddings=False).eval()
    assert model.encoder_position_bias.layer_idx == 0
    assert model.decoder_position_bias.layer_idx == 2  # first decoder block
    seen = []
    for layer in list(model.encoder.layers) + list(model.decoder.layers):
        original = layer.self_attention.forward

        def spy(*args, _orig=original, **kwargs):
            seen.append(kwargs.get("position_bias"))
            return _orig(*args, **kwargs)

        layer.self_attention.forward = spy
    rng = np.random.RandomState(0)
    with flow.no_grad():
        model(flow.tensor(rng.randint(0, 40, (2, 5))), flow.tensor(rng.randint(0, 40, (2, 3))))
    assert [tuple(b.shape) for b in seen] == [(1, 2, 5, 5)] * 2 + [(1, 2, 3, 3)] * 2
    assert seen[0] is seen[1] and seen[2] is seen[3]  # computed once per stack


def test_cached_decoding_equals_full_decoding_with_relative_bias(local_layout):
    flow.manual_seed(0)
    model = T5Model(**TINY, **GOOGLE).eval()
    rng = np.random.RandomState(1)
    enc_ids, dec_ids = flow.tensor(rng.randint(0, 40, (2, 5))), rng.randint(0, 40, (2, 4))
    with flow.no_grad():
        states = model.encode(enc_ids)
        full = model.decode(flow.tensor(dec_ids), states).numpy()
        steps, cache = [], None
        for t in range(4):
            out, cache = model.decode(flow.tensor(dec_ids[:, t:t + 1]), states,
                                      past_key_values=cache, use_cache=True)
            steps.append(out.numpy())
    # one query at a time sums attention in another order than the full pass: float32 rounding
    # (seen up to 5e-5 relative); a wrong bias or cache would be off by whole units
    np.testing.assert_allclose(np.concatenate(steps, 1), full, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("tied,scale,factor", [(True, True, 16 ** -0.5), (True, False, 1.0),
                                               (False, True, None)])
def test_decoder_output_scaling_applies_to_tied_heads_only(local_layout, tied, scale, factor):
    flow.manual_seed(0)
    model = T5Model(**TINY, **GOOGLE, tie_word_embeddings=tied, scale_decoder_outputs=scale).eval()
    rng = np.random.RandomState(2)
    enc, dec = flow.tensor(rng.randint(0, 40, (1, 4))), flow.tensor(rng.randint(0, 40, (1, 3)))
    with flow.no_grad():
        logits = model(enc, dec).numpy()
        states = model.decoder(model.embeddings(dec), encoder_states=model.encode(enc),
                               position_bias=model.decoder_position_bias(3, 3)).numpy()
    if tied:
        head = model.embeddings.word_embedding_weight().numpy()
        np.testing.assert_allclose(logits, factor * states @ head.T, rtol=1e-5, atol=1e-5)
    else:
        assert model.scale_decoder_outputs is False  # ignored without a tied head
        np.testing.assert_allclose(logits, states @ model.lm_head.weight.numpy().T,
                                   rtol=1e-5, atol=1e-5)


def test_v1_1_flavour_trains(local_layout):
    flow.manual_seed(0)
    model = T5ForPreTraining(dict(TINY, **GOOGLE, gated_mlp=True, activation="gelu_new",
                                  tie_word_embeddings=False))
    rng = np.random.RandomState(3)
    batch = dict(encoder_input_ids=flow.tensor(rng.randint(0, 40, (4, 6))),
                 decoder_input_ids=flow.tensor(rng.randint(0, 40, (4, 5))),
                 lm_labels=flow.tensor(rng.randint(0, 40, (4, 5))))
    opt = flow.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        loss = model(**batch)["masked_lm_loss"]
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.numpy()))
    assert losses[-1] < 0.5 * losses[0]
    bias = model.t5_model.encoder_position_bias.relative_attention_bias.weight
    assert float(np.abs(bias.numpy()).sum()) > 0


def test_unknown_position_embedding_type_is_refused(local_layout):
    with pytest.raises(ValueError, match="position_embedding_type='rotary'"):
        T5Model(**TINY, position_embedding_type="rotary")


# ---------------------------------------------------------------------------- presets
@pytest.mark.parametrize("size,flavour,params", [
    ("small", "t5", 60_506_624),  # t5-small (shared, tied head)
    ("small", "t5_v1_1", 76_961_152),  # google/t5-v1_1-small (untied head)
])
def test_presets_have_the_released_parameter_counts(local_layout, size, flavour, params):
    model = T5ForPreTraining(presets.t5_cfg(size, flavour))
    assert sum(p.numel() for p in model.parameters()) == params


def test_named_presets_are_lazy_configs_with_their_sizes():
    expected = {
        presets.t5_small: (512, 6, 8, 2048, 30522),
        presets.t5_base: (768, 12, 12, 3072, 30522),
        presets.t5_large: (1024, 24, 16, 4096, 30522),
        presets.t5_v1_1_small: (512, 8, 6, 1024, 32128),
        presets.t5_v1_1_base: (768, 12, 12, 2048, 32128),
        presets.mt5_small: (512, 8, 6, 1024, 250112),
        presets.mt5_base: (768, 12, 12, 2048, 250112),
    }
    for make, (hidden, layers, heads, ffn, vocab) in expected.items():
        cfg = make().cfg
        got = (cfg["hidden_size"], cfg["hidden_layers"], cfg["num_attention_heads"],
               cfg["intermediate_size"], cfg["vocab_size"])
        assert got == (hidden, layers, heads, ffn, vocab), make.__name__
        assert cfg["decoder_layers"] == layers and cfg["head_size"] == 64
    assert presets.mt5_small().cfg["gated_mlp"] and not presets.mt5_small().cfg["tie_word_embeddings"]
    assert presets.t5_cfg("base", "t5")["scale_decoder_outputs"]
    with pytest.raises(ValueError, match="unknown T5 flavour 'mt6'"):
        presets.t5_cfg("small", "mt6")
    with pytest.raises(ValueError, match="unknown T5 size 'xxl'"):
        presets.t5_cfg("xxl", "mt5")
