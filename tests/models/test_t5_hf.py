"""T5 and MT5 Hugging Face checkpoints in and out.

The fixtures tests/fixtures/hf/{t5,mt5} are tiny ``T5ForConditionalGeneration`` /
``MT5ForConditionalGeneration`` models made by make_hf_fixtures.py with transformers 5.24:
original T5 (ReLU MLP, tied head with the ``d_model ** -0.5`` rescaling) and MT5 (gated-GELU,
tied head that transformers 5 does not rescale). ``reference.npz`` holds transformers' float32
logits for a padded encoder batch and its greedy / ``num_beams=3`` generations
(``max_new_tokens=6``, eos 2, pad 0, ``decoder_start_token_id`` 0 from config.json).
"""
import json
import os
import shutil

import numpy as np
import oneflow as flow
import pytest

from libai.models import T5ForPreTraining, T5Model
from libai.models.pretrained import read_config, read_state_dict, save_pretrained
from libai.models.pretrained.families.t5 import scales_decoder_outputs

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf")
TOL = 1e-4
COMMON = dict(max_new_tokens=6, eos_token_id=2, pad_token_id=0)


def _fixture(name):
    return os.path.join(FIXTURES, name)


def _ref(name):
    return np.load(os.path.join(_fixture(name), "reference.npz"))


def _logits(model, ref):
    args = [flow.tensor(ref[k]) for k in ("input_ids", "decoder_input_ids", "attention_mask")]
    with flow.no_grad():
        if isinstance(model, T5ForPreTraining):
            out = model.eval()(args[0], args[1], args[2], None, args[2])["prediction_scores"]
        else:
            out = model.eval()(args[0], args[1], args[2], None, args[2])
    return out.numpy()


@pytest.fixture(scope="module", params=["t5", "mt5"])
def loaded(request):
    name = request.param
    return name, T5ForPreTraining.from_pretrained(_fixture(name)).eval(), _ref(name)


@pytest.mark.parametrize("cls", [T5Model, T5ForPreTraining])
@pytest.mark.parametrize("name", ["t5", "mt5"])
def test_logits_match_transformers(name, cls):
    ref = _ref(name)
    logits = _logits(cls.from_pretrained(_fixture(name)), ref)
    assert logits.shape == ref["logits"].shape == (2, 5, 96)
    assert np.abs(logits - ref["logits"]).max() < TOL


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "no_cache"])
@pytest.mark.parametrize("case", ["greedy", "beam3"])
def test_generation_equals_transformers(loaded, case, use_cache):
    _, model, ref = loaded
    beams = dict(num_beams=3) if case == "beam3" else {}
    tokens = model.generate(ref["input_ids"], attention_mask=ref["attention_mask"],
                            use_cache=use_cache, **beams, **COMMON)
    np.testing.assert_array_equal(tokens.numpy(), ref[case])


def test_decoder_start_and_special_ids_come_from_config(loaded):
    _, model, ref = loaded
    tokens = model.generate(ref["input_ids"], attention_mask=ref["attention_mask"], max_new_tokens=6)
    np.testing.assert_array_equal(tokens.numpy(), ref["greedy"])
    assert (tokens.numpy()[:, 0] == 0).all()  # decoder_start_token_id


def test_config_selects_googles_flavour():
    t5 = T5Model.from_pretrained(_fixture("t5"))
    mt5 = T5Model.from_pretrained(_fixture("mt5"))
    for model in (t5, mt5):
        attn = model.encoder.layers[0].self_attention
        assert model.relative and not hasattr(model.embeddings, "position_embeddings")
        assert attn.softmax_scale == 1.0 and attn.head_size == 8 and attn.dense.bias is None
        assert type(model.encoder.final_layernorm).__name__ == "RMSLayerNorm"
    t5_mlp, mt5_mlp = t5.encoder.layers[0].mlp, mt5.encoder.layers[0].mlp
    assert t5_mlp.activation_func.name == "relu" and not t5_mlp.gated
    assert mt5_mlp.activation_func.name == "gelu_tanh" and mt5_mlp.gated  # HF's gelu_new
    assert t5.scale_decoder_outputs and not mt5.scale_decoder_outputs


@pytest.mark.parametrize("cfg,expected", [
    ({"model_type": "t5", "scale_decoder_outputs": False, "tie_word_embeddings": True}, False),
    ({"model_type": "t5", "transformers_version": "4.40.0", "tie_word_embeddings": True}, True),
    ({"model_type": "t5", "transformers_version": "4.40.0", "tie_word_embeddings": False}, False),
    ({"model_type": "mt5", "transformers_version": "4.40.0", "tie_word_embeddings": True}, True),
    ({"model_type": "mt5", "transformers_version": "5.24.0", "tie_word_embeddings": True}, False),
])
def test_output_rescaling_follows_the_writing_transformers_version(cfg, expected):
    assert scales_decoder_outputs(cfg) is expected


@pytest.mark.parametrize("cls", [T5Model, T5ForPreTraining])
@pytest.mark.parametrize("name", ["t5", "mt5"])
def test_export_round_trips_tensors_and_config(name, cls, tmp_path):
    save_pretrained(cls.from_pretrained(_fixture(name)), str(tmp_path))
    exported, original = read_state_dict(str(tmp_path)), read_state_dict(_fixture(name))
    assert sorted(exported) == sorted(original)
    for key in original:
        assert np.array_equal(exported[key], original[key]), key
    cfg, ref_cfg = read_config(str(tmp_path)), read_config(_fixture(name))
    for key in ("model_type", "architectures", "vocab_size", "d_model", "d_kv", "d_ff",
                "num_layers", "num_decoder_layers", "num_heads", "feed_forward_proj",
                "relative_attention_num_buckets", "relative_attention_max_distance",
                "layer_norm_epsilon", "tie_word_embeddings", "decoder_start_token_id"):
        assert cfg[key] == ref_cfg[key], key


def test_untied_v1_1_checkpoint_loads_its_own_head_and_exports_it(tmp_path):
    """A transformers-4 style T5 v1.1 checkpoint: ``tie_word_embeddings: false`` and a separate
    ``lm_head.weight``. The head must be that tensor and the output must not be rescaled."""
    src = tmp_path / "v11"
    shutil.copytree(_fixture("mt5"), src)
    cfg = json.loads((src / "config.json").read_text())
    cfg.update(tie_word_embeddings=False, transformers_version="4.40.0")
    (src / "config.json").write_text(json.dumps(cfg))
    from safetensors.numpy import save_file

    state = read_state_dict(str(src))
    head = np.random.RandomState(0).randn(*state["shared.weight"].shape).astype(np.float32)
    save_file(dict(state, **{"lm_head.weight": head}), str(src / "model.safetensors"))
    model = T5Model.from_pretrained(str(src)).eval()
    assert not model.tie_word_embeddings and not model.scale_decoder_outputs
    np.testing.assert_array_equal(model.lm_head.weight.numpy(), head)
    ref = _ref("mt5")
    with flow.no_grad():
        states = model.decoder(
            model.embeddings(flow.tensor(ref["decoder_input_ids"])), None,
            encoder_states=model.encode(flow.tensor(ref["input_ids"]), flow.tensor(ref["attention_mask"])),
            encoder_attention_mask=flow.tensor(ref["attention_mask"]),
            position_bias=model.decoder_position_bias(5, 5),
        ).numpy()
    np.testing.assert_allclose(_logits(model, ref), states @ head.T, rtol=1e-5, atol=1e-5)
    save_pretrained(model, str(tmp_path / "out"))
    assert np.array_equal(read_state_dict(str(tmp_path / "out"))["lm_head.weight"], head)
    assert read_config(str(tmp_path / "out"))["tie_word_embeddings"] is False


def test_libai_flavour_export_is_refused_with_the_options_to_change(tmp_path, local_layout):
    model = T5Model(vocab_size=40, hidden_size=16, hidden_layers=1, num_attention_heads=2,
                    intermediate_size=32)
    with pytest.raises(ValueError, match="position_embedding_type='relative'.*softmax_scale=1.0"):
        model.save_pretrained(str(tmp_path))


def test_t5_loader_class_uses_the_same_mapping():
    import libai
    from configs.common.models.t5 import cfg
    from libai.models.utils import T5LoaderHuggerFace

    model = T5LoaderHuggerFace(libai.models.T5ForPreTraining, cfg, _fixture("mt5")).load()
    ref = _ref("mt5")
    assert np.abs(_logits(model, ref) - ref["logits"]).max() < TOL
    _, info = T5LoaderHuggerFace(libai.models.T5Model, {}, _fixture("t5"),
                                 output_loading_info=True).load()
    assert info == {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}


def test_embed_tokens_copies_must_equal_shared(tmp_path):
    src = tmp_path / "t5"
    shutil.copytree(_fixture("t5"), src)
    from safetensors.numpy import save_file

    state = read_state_dict(str(src))
    state["encoder.embed_tokens.weight"] = state["shared.weight"] + 1.0
    save_file(state, str(src / "model.safetensors"))
    with pytest.raises(ValueError, match="encoder.embed_tokens.weight"):
        T5Model.from_pretrained(str(src))
