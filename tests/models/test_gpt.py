"""GPT-2 in one process: construction styles, the causal LM loss against NumPy, causality,
layer indices and config errors."""
import numpy as np
import oneflow as flow
import pytest

from libai.config import LazyCall, instantiate
from libai.layers import TransformerLayer
from libai.models import GPTForPreTraining, GPTModel

CFG = dict(
    vocab_size=40, hidden_size=16, hidden_layers=2, num_attention_heads=4, intermediate_size=32,
    max_seq_length=12, embedding_dropout_prob=0.0, attention_dropout_prob=0.0,
    hidden_dropout_prob=0.0, initializer_range=0.2,
)


def _ids(batch=2, seq=6, seed=0):
    return np.random.RandomState(seed).randint(0, CFG["vocab_size"], size=(batch, seq))


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _params(model):
    return {k: v.numpy() for k, v in model.named_parameters()}


def test_three_construction_styles_build_the_same_model(local_layout):
    flow.manual_seed(0)
    from_dict = GPTForPreTraining(CFG)
    flow.manual_seed(0)
    from_keywords = GPTForPreTraining(**CFG)
    flow.manual_seed(0)
    from_lazy = instantiate(LazyCall(GPTForPreTraining)(cfg=CFG))
    a, b, c = _params(from_dict), _params(from_keywords), _params(from_lazy)
    assert a.keys() == b.keys() == c.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
        np.testing.assert_array_equal(a[name], c[name])


def test_lm_loss_matches_numpy(local_layout):
    model = GPTForPreTraining(CFG)
    ids, labels = _ids(), _ids(seed=1)
    labels[1, :2] = -100
    model.eval()
    logits = model(flow.tensor(ids))["prediction_scores"].numpy()
    assert logits.shape == (2, 6, CFG["vocab_size"])
    model.train()
    loss = model(flow.tensor(ids), flow.tensor(labels))["lm_loss"].numpy()
    logp = _log_softmax(logits.astype(np.float64))
    keep = labels != -100
    picked = np.take_along_axis(logp, np.where(keep, labels, 0)[..., None], -1)[..., 0]
    expected = -(picked * keep).sum() / keep.sum()
    np.testing.assert_allclose(loss, expected, rtol=1e-5)


def test_outputs_by_mode(local_layout):
    model = GPTForPreTraining(CFG)
    ids = flow.tensor(_ids())
    assert set(model(ids, ids)) == {"lm_loss"}
    assert set(model(ids)) == {"prediction_scores"}  # no labels: predictions even in training
    model.eval()
    assert set(model(ids, ids)) == {"prediction_scores"}


def test_gpt_is_causal(local_layout):
    model = GPTModel(CFG)
    ids = _ids(1, 8)
    changed = ids.copy()
    changed[0, 5] = (ids[0, 5] + 1) % CFG["vocab_size"]
    a = model(flow.tensor(ids)).numpy()
    b = model(flow.tensor(changed)).numpy()
    np.testing.assert_array_equal(a[0, :5], b[0, :5])
    assert not np.allclose(a[0, 5:], b[0, 5:])


def test_layer_indices_follow_the_pipeline_rule(local_layout):
    model = GPTModel(CFG)
    assert model.embeddings.word_embeddings.layer_idx == 0
    assert [layer.layer_idx for layer in model.transformer.layers] == [0, 1]
    assert model.transformer.final_layernorm.layer_idx == -1
    assert model.lm_head.layer_idx == -1


def test_activation_checkpoint_modules_are_the_blocks(local_layout):
    model = GPTForPreTraining(CFG)
    blocks = model.activation_checkpoint_modules()
    assert len(blocks) == 2 and all(isinstance(b, TransformerLayer) for b in blocks)
    assert isinstance(model.loss_func, flow.nn.Module)


def test_sequence_longer_than_the_positions_is_an_error(local_layout):
    model = GPTModel(CFG)
    with pytest.raises(ValueError, match="13 tokens exceeds the 12 learned positions"):
        model(flow.tensor(_ids(1, 13)))


def test_config_synonyms_and_errors(local_layout):
    synonyms = dict(CFG, ffn_hidden_size=CFG["intermediate_size"], output_dropout_prob=0.0)
    del synonyms["intermediate_size"], synonyms["hidden_dropout_prob"]
    model = GPTModel(synonyms)
    assert model.transformer.layers[0].mlp.dense_h_to_4h.out_features == 32
    with pytest.raises(ValueError, match="unknown model config key 'hiden_size'. Did you mean 'hidden_size'"):
        GPTForPreTraining(dict(CFG, hiden_size=8))
    with pytest.raises(ValueError, match="'intermediate_size' and 'ffn_hidden_size' set the same thing"):
        GPTModel(dict(CFG, ffn_hidden_size=32))
    missing = dict(CFG)
    del missing["vocab_size"]
    with pytest.raises(ValueError, match="does not set vocab_size"):
        GPTForPreTraining(cfg=missing)
