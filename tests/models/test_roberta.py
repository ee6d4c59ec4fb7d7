"""RoBERTa: position numbering from the padding id, shapes and heads, Hugging Face parity on
the committed fixture (tests/fixtures/hf/roberta, made by make_hf_fixtures.py), export round
trip, LiBai's loader class and config spellings, and a tiny run whose loss falls."""
import os

import numpy as np
import oneflow as flow
import pytest

from libai.models import BertModel, RobertaForCausalLM, RobertaForPreTraining, RobertaModel
from libai.models.pretrained import PretrainedLoadError, read_config
from libai.models.roberta import roberta_position_ids
from tests.models.hf_export_checks import assert_export_round_trips

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf", "roberta")
TOL = 1e-4
TINY = dict(vocab_size=40, hidden_size=16, hidden_layers=2, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=12, hidden_dropout_prob=0.0,
            attention_dropout_prob=0.0)


def _reference():
    return np.load(os.path.join(FIXTURE, "reference.npz"))


def _logits(model, ids, mask):
    with flow.no_grad():
        return model.eval()(flow.tensor(ids), flow.tensor(mask))["prediction_scores"].numpy()


def test_positions_count_real_tokens_after_the_padding_id():
    ids = flow.tensor([[0, 7, 8, 2, 1, 1], [0, 1, 9, 1, 5, 2]])
    expected = [[2, 3, 4, 5, 1, 1], [2, 1, 3, 1, 4, 5]]
    assert roberta_position_ids(ids, 1).numpy().tolist() == expected


def test_shapes_heads_and_what_differs_from_bert(local_layout):
    flow.manual_seed(0)
    model = RobertaForPreTraining(TINY)
    assert isinstance(model.roberta, BertModel)
    assert model.roberta.pooler is None and not hasattr(model, "cls_head")
    assert model.roberta.embeddings.tokentype_embeddings.weight.shape == (1, 16)
    ids = flow.tensor(np.random.RandomState(0).randint(2, 40, size=(3, 9)))
    mask = flow.ones(3, 9, dtype=flow.int64)
    assert model.eval()(ids, mask)["prediction_scores"].shape == (3, 9, 40)
    encoder = RobertaModel(TINY)
    seq, pooled = encoder(ids, mask)
    assert seq.shape == (3, 9, 16) and pooled.shape == (3, 16)
    with pytest.raises(ValueError, match="at most 10 tokens"):
        encoder(flow.ones(1, 11, dtype=flow.int64) * 5, flow.ones(1, 11, dtype=flow.int64))


def test_libai_config_spellings_are_accepted(local_layout):
    libai_cfg = dict(TINY, layernorm_eps=1e-5, add_pooling_layer=False, num_tokentypes=1,
                     pad_token_id=1)
    libai_cfg["attention_probs_dropout_prob"] = libai_cfg.pop("attention_dropout_prob")
    model = RobertaModel(libai_cfg)
    assert model.pooler is None
    with pytest.raises(ValueError, match="unknown model config key 'pad_id'"):
        RobertaModel(dict(TINY, pad_id=1))


def test_causal_lm_does_not_see_the_future(local_layout):
    flow.manual_seed(1)
    model = RobertaForCausalLM(TINY).eval()
    rng = np.random.RandomState(2)
    ids = rng.randint(2, 40, size=(2, 8))
    changed = ids.copy()
    changed[:, 5:] = rng.randint(2, 40, size=(2, 3))
    mask = np.ones_like(ids)
    a, b = _logits(model, ids, mask), _logits(model, changed, mask)
    assert np.abs(a[:, :5] - b[:, :5]).max() < 1e-6
    assert np.abs(a[:, 5:] - b[:, 5:]).max() > 1e-3
    model.train()
    out = model(flow.tensor(ids), flow.tensor(mask), labels=flow.tensor(ids))
    scores = _logits(model, ids, mask)[:, :-1]
    logp = scores - np.log(np.exp(scores).sum(-1, keepdims=True))
    expected = -np.take_along_axis(logp, ids[:, 1:, None], -1).mean()
    assert abs(float(out["lm_loss"].numpy()) - expected) < 1e-5


def test_fixture_matches_transformers_logits():
    ref = _reference()
    model = RobertaForPreTraining.from_pretrained(FIXTURE)
    assert model.roberta.encoder.layers[0].pre_norm is False
    logits = _logits(model, ref["input_ids"], ref["attention_mask"])
    assert logits.shape == ref["logits"].shape
    assert np.abs(logits - ref["logits"]).max() < TOL


def test_export_round_trips_tensors_and_config(tmp_path):
    assert_export_round_trips(
        RobertaForPreTraining.from_pretrained(FIXTURE), FIXTURE, str(tmp_path),
        ("model_type", "architectures", "vocab_size", "hidden_size", "num_hidden_layers",
         "max_position_embeddings", "type_vocab_size", "pad_token_id", "layer_norm_eps", "is_decoder"))
    ref = _reference()
    again = RobertaForPreTraining.from_pretrained(str(tmp_path))
    assert np.abs(_logits(again, ref["input_ids"], ref["attention_mask"]) - ref["logits"]).max() < TOL


def test_decoder_and_encoder_checkpoints_go_only_where_they_fit(tmp_path):
    with pytest.raises(ValueError, match="is_decoder=False: load it into RobertaModel or "
                                         "RobertaForPreTraining, not RobertaForCausalLM"):
        RobertaForCausalLM.from_pretrained(FIXTURE)
    with pytest.raises(PretrainedLoadError, match="pooler"):
        RobertaModel.from_pretrained(FIXTURE)  # RobertaForMaskedLM has no pooler


def test_causal_lm_export_is_a_decoder_checkpoint_and_reloads_equal(tmp_path, local_layout):
    flow.manual_seed(6)
    model = RobertaForCausalLM(dict(TINY, layernorm_position="post"))
    model.save_pretrained(str(tmp_path))
    cfg = read_config(str(tmp_path))
    assert cfg["is_decoder"] is True and cfg["architectures"] == ["RobertaForCausalLM"]
    again = RobertaForCausalLM.from_pretrained(str(tmp_path))
    ids = np.random.RandomState(7).randint(2, 40, size=(2, 6))
    mask = np.ones_like(ids)
    assert np.array_equal(_logits(model, ids, mask), _logits(again, ids, mask))
    with pytest.raises(ValueError, match="is_decoder=True: load it into RobertaForCausalLM"):
        RobertaForPreTraining.from_pretrained(str(tmp_path))


@pytest.mark.parametrize("spelling", ["libai", "LiBai"])
def test_libai_loader_class_loads_through_the_same_mapping(spelling):
    import libai
    from configs.common.models.roberta import cfg
    from libai.models.utils import RobertaLoaderHuggerFace

    if spelling == "LiBai":  # the keys of LiBai's configs/common/models/roberta.py
        cfg = dict(cfg, add_pooling_layer=cfg["add_pooler"], layernorm_eps=cfg["layernorm_epsilon"],
                   attention_probs_dropout_prob=0.1, bias_gelu_fusion=True,
                   apply_query_key_layer_scaling=True)
        for ours in ("add_pooler", "layernorm_epsilon", "attention_dropout_prob", "layernorm_position"):
            cfg.pop(ours)
    ref = _reference()
    model, info = RobertaLoaderHuggerFace(libai.models.RobertaForPreTraining, cfg, FIXTURE,
                                          hidden_dropout_prob=0.0, output_loading_info=True).load()
    assert info == {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}
    assert model.roberta.embeddings.pad_token_id == 1
    assert model.roberta.encoder.layers[0].pre_norm is False  # the checkpoint's arrangement wins
    assert np.abs(_logits(model, ref["input_ids"], ref["attention_mask"]) - ref["logits"]).max() < TOL


@pytest.mark.parametrize("cls", [RobertaForPreTraining, RobertaForCausalLM])
def test_a_tiny_run_lowers_the_loss(cls, local_layout):
    flow.manual_seed(4)
    model = cls(TINY).train()
    rng = np.random.RandomState(5)
    ids = flow.tensor(rng.randint(2, 40, size=(4, 8)))
    mask = flow.ones(4, 8, dtype=flow.int64)
    labels = {"lm_labels": ids, "loss_mask": mask} if cls is RobertaForPreTraining else {"labels": ids}
    optimizer = flow.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(12):
        loss = model(ids, mask, **labels)["lm_loss"]
        losses.append(float(loss.numpy()))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert losses[-1] < 0.75 * losses[0], losses
