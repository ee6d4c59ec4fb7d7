"""BERT and T5 in one process: losses against NumPy, masks, head options, layer indices and
the built-in model configs."""
import os

import numpy as np
import oneflow as flow
import pytest

from libai.config import LazyConfig, instantiate
from libai.models import BertForClassification, BertForPreTraining, BertModel, T5ForPreTraining, T5Model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BODY = dict(
    vocab_size=40, hidden_size=16, hidden_layers=2, num_attention_heads=4, intermediate_size=32,
    hidden_dropout_prob=0.0, attention_dropout_prob=0.0, initializer_range=0.2,
    max_position_embeddings=10,
)
RNG = np.random.RandomState(0)


def _log_softmax(z):
    z = z.astype(np.float64) - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _nll(logits, labels):
    return -np.take_along_axis(_log_softmax(logits), labels[..., None], -1)[..., 0]


def _bert_batch(batch=3, seq=7):
    mask = np.ones((batch, seq), dtype=np.int64)
    mask[1, -2:] = 0
    return dict(
        input_ids=RNG.randint(0, 40, (batch, seq)),
        attention_mask=mask,
        tokentype_ids=(np.arange(seq) > 3).astype(np.int64)[None].repeat(batch, 0),
        ns_labels=RNG.randint(0, 2, (batch,)),
        lm_labels=RNG.randint(0, 40, (batch, seq)),
        loss_mask=(RNG.rand(batch, seq) < 0.5).astype(np.int64),
    )


def _tensors(batch):
    return {k: flow.tensor(v) for k, v in batch.items()}


def test_bert_pretraining_losses_match_numpy(local_layout):
    model = BertForPreTraining(BODY)
    batch = _bert_batch()
    batch["loss_mask"][:, 0] = 1
    model.eval()
    out = model(**_tensors(batch))
    scores, rel = out["prediction_scores"].numpy(), out["seq_relationship_score"].numpy()
    model.train()
    losses = model(**_tensors(batch))
    mask = batch["loss_mask"]
    lm = (_nll(scores, batch["lm_labels"]) * mask).sum() / mask.sum()
    sop = _nll(rel, batch["ns_labels"]).mean()
    np.testing.assert_allclose(losses["lm_loss"].numpy(), lm, rtol=1e-5)
    np.testing.assert_allclose(losses["sop_loss"].numpy(), sop, rtol=1e-5)


def test_bert_padding_does_not_leak_into_real_tokens(local_layout):
    model = BertModel(BODY)
    batch = _bert_batch()
    changed = batch["input_ids"].copy()
    changed[1, -2:] = (changed[1, -2:] + 7) % 40  # only padded positions of sample 1 change
    a, _ = model(flow.tensor(batch["input_ids"]), flow.tensor(batch["attention_mask"]))
    b, _ = model(flow.tensor(changed), flow.tensor(batch["attention_mask"]))
    np.testing.assert_array_equal(a.numpy()[1, :-2], b.numpy()[1, :-2])
    np.testing.assert_array_equal(a.numpy()[0], b.numpy()[0])


def test_bert_without_binary_head_reports_only_lm_loss(local_layout):
    model = BertForPreTraining(dict(BODY, add_binary_head=False))
    assert set(model(**_tensors(_bert_batch()))) == {"lm_loss"}


def test_post_norm_bert_normalises_embeddings_and_has_no_final_norm(local_layout):
    model = BertModel(dict(BODY, layernorm_position="post"))
    assert model.embeddings.embedding_layernorm is not None
    assert model.encoder.final_layernorm is None
    assert hasattr(model.encoder.layers[0], "output_layernorm")
    seq, pooled = model(flow.tensor(_bert_batch()["input_ids"]), flow.ones(3, 7))
    assert seq.shape == (3, 7, 16) and pooled.shape == (3, 16)
    # the last block ends with a LayerNorm (scale 1, shift 0 at init): unit std per token
    np.testing.assert_allclose(seq.numpy().std(-1), 1.0, rtol=1e-3)


def test_bert_classification(local_layout):
    model = BertForClassification(dict(BODY, num_labels=3))
    batch = _bert_batch()
    labels = np.array([0, 2, 1])
    model.eval()
    logits = model(flow.tensor(batch["input_ids"]), flow.tensor(batch["attention_mask"]))["prediction_scores"]
    assert logits.shape == (3, 3)
    model.train()
    loss = model(flow.tensor(batch["input_ids"]), flow.tensor(batch["attention_mask"]), labels=flow.tensor(labels))
    np.testing.assert_allclose(loss["cls_loss"].numpy(), _nll(logits.numpy(), labels).mean(), rtol=1e-5)


def test_bert_config_errors(local_layout):
    with pytest.raises(ValueError, match="add_binary_head=True needs add_pooler=True"):
        BertForPreTraining(dict(BODY, add_pooler=False))
    with pytest.raises(ValueError, match="unknown model config key 'num_label'. Did you mean 'num_labels'"):
        BertForClassification(dict(BODY, num_label=3))


def _t5_batch(batch=2, enc=7, dec=5):
    enc_real = np.ones((batch, enc), dtype=bool)
    enc_real[1, -2:] = False
    causal = np.tril(np.ones((dec, dec), dtype=bool))
    return dict(
        encoder_input_ids=RNG.randint(0, 40, (batch, enc)),
        decoder_input_ids=RNG.randint(0, 40, (batch, dec)),
        encoder_attn_mask=(enc_real[:, :, None] & enc_real[:, None, :]).astype(np.int64),
        decoder_attn_mask=causal[None].repeat(batch, 0).astype(np.int64),
        encoder_decoder_attn_mask=np.repeat(enc_real[:, None, :], dec, 1).astype(np.int64),
        lm_labels=RNG.randint(0, 40, (batch, dec)),
        loss_mask=np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]]),
    )


def test_t5_loss_matches_numpy(local_layout):
    model = T5ForPreTraining(BODY)
    batch = _t5_batch()
    model.eval()
    logits = model(**_tensors(batch))["prediction_scores"].numpy()
    assert logits.shape == (2, 5, 40)
    model.train()
    loss = model(**_tensors(batch))["masked_lm_loss"].numpy()
    mask = batch["loss_mask"]
    np.testing.assert_allclose(loss, (_nll(logits, batch["lm_labels"]) * mask).sum() / mask.sum(), rtol=1e-5)


def test_t5_decoder_is_causal_and_reads_the_encoder(local_layout):
    model = T5Model(BODY)
    batch = _t5_batch()
    fields = ["encoder_input_ids", "decoder_input_ids", "encoder_attn_mask", "decoder_attn_mask",
              "encoder_decoder_attn_mask"]
    base = model(*[flow.tensor(batch[f]) for f in fields]).numpy()
    future = dict(batch)
    future["decoder_input_ids"] = batch["decoder_input_ids"].copy()
    future["decoder_input_ids"][:, 3] = (future["decoder_input_ids"][:, 3] + 1) % 40
    changed = model(*[flow.tensor(future[f]) for f in fields]).numpy()
    np.testing.assert_array_equal(base[:, :3], changed[:, :3])
    source = dict(batch)
    source["encoder_input_ids"] = (batch["encoder_input_ids"] + 1) % 40
    assert not np.allclose(model(*[flow.tensor(source[f]) for f in fields]).numpy()[:, 0], base[:, 0])


def test_t5_numbers_decoder_blocks_after_the_encoder(local_layout):
    model = T5Model(dict(BODY, decoder_layers=3))
    assert [b.layer_idx for b in model.encoder.layers] == [0, 1]
    assert [b.layer_idx for b in model.decoder.layers] == [2, 3, 4]
    assert model.encoder.final_layernorm.layer_idx == 1
    assert model.decoder.final_layernorm.layer_idx == -1
    assert len(model.activation_checkpoint_modules()) == 5


@pytest.mark.parametrize("name, loss_keys", [("gpt", {"lm_loss"}), ("bert", {"lm_loss", "sop_loss"}),
                                             ("t5", {"masked_lm_loss"})])
def test_builtin_model_configs_build_and_train(local_layout, name, loss_keys):
    cfg = LazyConfig.load(os.path.join(REPO, "configs", "common", "models", f"{name}.py"))
    cfg.model.cfg.update(hidden_size=16, hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                         vocab_size=64)
    model = instantiate(cfg.model)
    if name == "gpt":
        ids = flow.tensor(RNG.randint(0, 64, (2, 6)))
        losses = model(ids, ids)
    elif name == "bert":
        losses = model(**_tensors({k: v % 64 if "ids" in k else v for k, v in _bert_batch().items()}))
    else:
        losses = model(**_tensors(_t5_batch()))
    assert set(losses) == loss_keys
    assert all(np.isfinite(v.numpy()) for v in losses.values())
