"""Hugging Face checkpoints in and out: parity with transformers' logits on the committed
fixtures (tests/fixtures/hf, made by make_hf_fixtures.py), the three file formats, errors that
name the offending key, the torch-free .bin reader's refusals, export round trips, LiBai's
loader classes and train.load_weight's delegation."""
import json
import os
import pickle
import shutil
import zipfile

import numpy as np
import oneflow as flow
import pytest
from safetensors.numpy import load_file, save_file

from libai.models import (
    BertForClassification, BertForPreTraining, BertModel, GPTForPreTraining, GPTModel,
    ResMLP, SwinTransformer, VisionTransformer,
)
from libai.models.pretrained import (
    PretrainedLoadError, from_pretrained, load_into, read_config, read_state_dict, save_pretrained,
)
from libai.models.pretrained.api import load_weight
from libai.models.pretrained.mapping import fused_heads, split_fused_heads
from libai.models.pretrained.torch_pickle import TorchPickleError, read_torch_bin

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf")
TOL = 1e-4

# fixture -> (class, input names in forward order, reference key, output key)
CASES = {
    "gpt2": (GPTForPreTraining, ["input_ids"], "logits", "prediction_scores"),
    "bert": (BertForPreTraining, ["input_ids", "attention_mask", "token_type_ids"],
             "prediction_logits", "prediction_scores"),
    "bert_classifier": (BertForClassification, ["input_ids", "attention_mask", "token_type_ids"],
                        "logits", "prediction_scores"),
    "vit": (VisionTransformer, ["pixel_values"], "logits", "prediction_scores"),
    "swin": (SwinTransformer, ["pixel_values"], "logits", "prediction_scores"),
}


def _fixture(name):
    return os.path.join(FIXTURES, name)


def _run(model, fixture, names, out_key):
    ref = np.load(os.path.join(_fixture(fixture), "reference.npz"))
    with flow.no_grad():
        out = model.eval()(*[flow.tensor(ref[n]) for n in names])
    return (out[out_key] if isinstance(out, dict) else out).numpy(), ref


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_fixture_matches_transformers_logits(fixture):
    cls, names, ref_key, out_key = CASES[fixture]
    logits, ref = _run(cls.from_pretrained(_fixture(fixture)), fixture, names, out_key)
    assert logits.shape == ref[ref_key].shape
    assert np.abs(logits - ref[ref_key]).max() < TOL


def test_bert_binary_head_and_base_model_match():
    ref = np.load(os.path.join(_fixture("bert"), "reference.npz"))
    args = [flow.tensor(ref[n]) for n in ("input_ids", "attention_mask", "token_type_ids")]
    with flow.no_grad():
        out = BertForPreTraining.from_pretrained(_fixture("bert")).eval()(*args)
        seq, pooled = BertModel.from_pretrained(_fixture("bert")).eval()(*args)
    assert np.abs(out["seq_relationship_score"].numpy() - ref["seq_relationship_logits"]).max() < TOL
    assert seq.shape == (2, 8, 32) and pooled.shape == (2, 32)


def test_gpt_model_without_loss_wrapper_matches():
    logits, ref = _run(GPTModel.from_pretrained(_fixture("gpt2")), "gpt2", ["input_ids"], None)
    assert np.abs(logits - ref["logits"]).max() < TOL


def test_sizes_and_activation_come_from_config_json():
    model = GPTForPreTraining.from_pretrained(_fixture("gpt2"))
    layer = model.GPT_model.transformer.layers[0]
    assert layer.mlp.activation_func.name == "gelu_tanh"  # config says gelu_new
    assert layer.self_attention.num_heads == 4
    assert model.GPT_model.embeddings.position_embeddings.weight.shape == (64, 32)
    vit = VisionTransformer.from_pretrained(_fixture("vit"))
    assert vit.norm.eps == 1e-12 and vit.head.weight.shape == (10, 32)
    assert BertForClassification.from_pretrained(_fixture("bert_classifier")).classifier.weight.shape == (3, 32)


def test_overrides_replace_mapped_arguments():
    model = GPTForPreTraining.from_pretrained(_fixture("gpt2"), hidden_dropout_prob=0.0)
    assert model.GPT_model.transformer.layers[0].self_attention.output_dropout.p == 0.0


@pytest.mark.parametrize("other", ["gpt2_bin", "gpt2_sharded"])
def test_bin_and_sharded_read_equal_to_safetensors(other):
    single = read_state_dict(_fixture("gpt2"))
    state = read_state_dict(_fixture(other))
    # the .bin keeps the tied lm_head copy that save_pretrained leaves out
    assert sorted(set(state) - {"lm_head.weight"}) == sorted(single)
    for key, value in single.items():
        assert value.dtype == state[key].dtype and np.array_equal(value, state[key]), key
    logits, ref = _run(GPTForPreTraining.from_pretrained(_fixture(other)), other, ["input_ids"],
                       "prediction_scores")
    assert np.abs(logits - ref["logits"]).max() < TOL


def _copy_with(tmp_path, change):
    out = tmp_path / "ckpt"
    shutil.copytree(_fixture("gpt2"), out)
    state = load_file(str(out / "model.safetensors"))
    change(state)
    save_file(state, str(out / "model.safetensors"))
    return str(out)


def test_missing_tensor_is_named(tmp_path):
    path = _copy_with(tmp_path, lambda s: s.pop("transformer.h.1.ln_2.weight"))
    with pytest.raises(PretrainedLoadError, match=r"missing .*transformer\.h\.1\.ln_2\.weight "
                                                  r"\(for GPT_model\.transformer\.layers\.1\.post_attention_layernorm\.weight\)"):
        GPTForPreTraining.from_pretrained(path)


def test_missing_tensor_with_strict_false_keeps_initial_value_and_reports(tmp_path):
    path = _copy_with(tmp_path, lambda s: s.pop("transformer.h.1.ln_2.weight"))
    model = GPTForPreTraining.from_pretrained(_fixture("gpt2"))
    report = load_into(model, path, strict=False)
    assert report.missing == ["transformer.h.1.ln_2.weight (for GPT_model.transformer.layers.1.post_attention_layernorm.weight)"]


def test_unexpected_tensor_is_named(tmp_path):
    path = _copy_with(tmp_path, lambda s: s.update({"transformer.h.0.attn.extra": np.ones(3, np.float32)}))
    with pytest.raises(PretrainedLoadError, match=r"unexpected in the checkpoint \(1\): transformer\.h\.0\.attn\.extra"):
        GPTForPreTraining.from_pretrained(path)


def test_shape_mismatch_is_named():
    with pytest.raises(PretrainedLoadError, match=r"shape mismatch: GPT_model\.embeddings\.position_embeddings\.weight "
                                                  r"\(from transformer\.wpe\.weight\) is \(64, 32\) in the checkpoint but \(32, 32\)"):
        GPTForPreTraining.from_pretrained(_fixture("gpt2"), max_seq_length=32)


def test_untied_lm_head_is_refused(tmp_path):
    path = _copy_with(tmp_path, lambda s: s.update({"lm_head.weight": s["transformer.wte.weight"] + 1}))
    with pytest.raises(PretrainedLoadError, match=r"lm_head\.weight \(differs from transformer\.wte\.weight"):
        GPTForPreTraining.from_pretrained(path)


def test_unsupported_config_is_refused(tmp_path):
    out = tmp_path / "ckpt"
    shutil.copytree(_fixture("gpt2"), out)
    cfg = json.loads((out / "config.json").read_text())
    cfg["scale_attn_by_inverse_layer_idx"] = True
    (out / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="scale_attn_by_inverse_layer_idx=True"):
        GPTForPreTraining.from_pretrained(str(out))


def test_wrong_family_and_unmapped_class_are_refused():
    with pytest.raises(ValueError, match=r"a 'gpt2' checkpoint cannot be loaded into BertModel"):
        BertModel.from_pretrained(_fixture("gpt2"))
    with pytest.raises(ValueError, match="ResMLP has no Hugging Face weight mapping"):
        from_pretrained(ResMLP, _fixture("t5"))


def test_fused_heads_layout_is_per_head_q_k_v():
    # 2 heads of size 1: rows must read q0 k0 v0 q1 k1 v1
    q, k, v = np.array([[10.], [11.]]), np.array([[20.], [21.]]), np.array([[30.], [31.]])
    fused = fused_heads([q, k, v], num_heads=2)
    assert fused[:, 0].tolist() == [10, 20, 30, 11, 21, 31]
    back = split_fused_heads(fused, 3, 2)
    assert all(np.array_equal(a, b) for a, b in zip(back, (q, k, v)))


# ------------------------------------------------------------------ the torch-free .bin reader
def _zip_pickle(tmp_path, payload: bytes, name="bad.bin"):
    path = str(tmp_path / name)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", payload)
    return path


def test_bin_reader_refuses_foreign_globals(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    path = _zip_pickle(tmp_path, pickle.dumps({"w": Evil()}, protocol=2))
    with pytest.raises(TorchPickleError, match=r"refers to (posix|os)\.system"):
        read_torch_bin(path)


def test_bin_reader_refuses_legacy_format(tmp_path):
    path = tmp_path / "old.bin"
    path.write_bytes(pickle.dumps({"w": 1}))
    with pytest.raises(TorchPickleError, match="legacy torch.save format"):
        read_torch_bin(str(path))


def test_bin_reader_reads_strided_views(tmp_path):
    # a hand-written torch-format archive holding a transposed (non-contiguous) view of a
    # 2x3 float storage: the reader must honour offset, size and stride
    path = str(tmp_path / "m.bin")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("m/data.pkl", _torch_style_pickle())
        z.writestr("m/data/0", np.arange(6, dtype="<f4").tobytes())
    assert read_torch_bin(path)["w"].tolist() == [[0, 3], [1, 4], [2, 5]]


def _torch_style_pickle() -> bytes:
    """Protocol-2 opcodes for ``{"w": _rebuild_tensor_v2(<persistent storage ('storage',
    FloatStorage, '0', 'cpu', 6)>, 0, (3, 2), (1, 3), False, OrderedDict())}``."""

    def glob(module, name):
        return b"c" + module.encode() + b"\n" + name.encode() + b"\n"

    def text(s):
        return b"X" + len(s).to_bytes(4, "little") + s.encode()

    def small(i):
        return b"K" + bytes([i])

    out = b"\x80\x02}" + text("w")
    out += glob("torch._utils", "_rebuild_tensor_v2") + b"("
    out += b"(" + text("storage") + glob("torch", "FloatStorage") + text("0") + text("cpu") + small(6) + b"tQ"
    out += small(0) + small(3) + small(2) + b"\x86" + small(1) + small(3) + b"\x86" + b"\x89"
    out += glob("collections", "OrderedDict") + b")R" + b"tR" + b"s."
    return out


# ------------------------------------------------------------------ export
SIZES = {
    "gpt2": ["vocab_size", "n_embd", "n_layer", "n_head", "n_positions", "layer_norm_epsilon",
             "activation_function"],
    "bert": ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
             "intermediate_size", "max_position_embeddings", "type_vocab_size", "layer_norm_eps",
             "hidden_act"],
    "bert_classifier": ["hidden_size", "num_hidden_layers", "id2label", "num_labels"],
    "vit": ["image_size", "patch_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
            "intermediate_size", "layer_norm_eps"],
    "swin": ["image_size", "patch_size", "embed_dim", "depths", "num_heads", "window_size",
             "mlp_ratio", "layer_norm_eps"],
}


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_export_round_trips_tensors_and_config(fixture, tmp_path):
    model = CASES[fixture][0].from_pretrained(_fixture(fixture))
    save_pretrained(model, str(tmp_path))
    exported, original = read_state_dict(str(tmp_path)), read_state_dict(_fixture(fixture))
    assert sorted(exported) == sorted(original)
    for key in original:
        assert np.array_equal(exported[key], original[key]), key
    cfg, ref_cfg = read_config(str(tmp_path)), read_config(_fixture(fixture))
    ref_cfg.setdefault("num_labels", len(ref_cfg.get("id2label") or {}) or None)
    for key in SIZES[fixture]:
        assert cfg[key] == ref_cfg[key], key
    assert cfg["architectures"] == ref_cfg["architectures"]


def test_export_of_a_model_trained_from_scratch_reloads_equal(tmp_path, local_layout):
    cfg = dict(vocab_size=40, hidden_size=16, hidden_layers=2, num_attention_heads=4,
               intermediate_size=32, max_seq_length=12, activation="gelu")
    flow.manual_seed(3)
    model = GPTForPreTraining(cfg).eval()
    model.save_pretrained(str(tmp_path))
    assert read_config(str(tmp_path))["activation_function"] == "gelu"
    again = GPTForPreTraining.from_pretrained(str(tmp_path)).eval()
    ids = flow.tensor(np.random.RandomState(0).randint(0, 40, size=(2, 7)))
    with flow.no_grad():
        a, b = model(ids)["prediction_scores"].numpy(), again(ids)["prediction_scores"].numpy()
    assert np.array_equal(a, b)


def test_pre_norm_bert_export_is_refused(tmp_path, local_layout):
    model = BertForPreTraining(dict(vocab_size=40, hidden_size=16, hidden_layers=1,
                                    num_attention_heads=2, intermediate_size=32))
    with pytest.raises(ValueError, match="pre-norm"):
        model.save_pretrained(str(tmp_path))


# ------------------------------------------------------------------ LiBai's doors
def test_libai_loader_classes_use_the_same_mapping():
    import libai
    from configs.common.models.bert import cfg
    from libai.models.utils import BertLoaderHuggerFace, T5LoaderHuggerFace
    from libai.models.utils.model_loader import GPT2LoaderHuggerFace  # LiBai's module path

    model = BertLoaderHuggerFace(libai.models.BertForPreTraining, cfg, _fixture("bert"),
                                 hidden_dropout_prob=0.0, apply_residual_post_layernorm=True).load()
    logits, ref = _run(model, "bert", ["input_ids", "attention_mask", "token_type_ids"], "prediction_scores")
    assert np.abs(logits - ref["prediction_logits"]).max() < TOL
    base, info = BertLoaderHuggerFace(libai.models.BertModel, cfg, _fixture("bert"),
                                      output_loading_info=True).load()
    assert info == {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}
    gpt = GPT2LoaderHuggerFace(libai.models.GPTForPreTraining, {}, _fixture("gpt2")).load()
    logits, ref = _run(gpt, "gpt2", ["input_ids"], "prediction_scores")
    assert np.abs(logits - ref["logits"]).max() < TOL
    t5 = T5LoaderHuggerFace(libai.models.T5Model, {}, _fixture("t5")).load()  # tests/models/test_t5_hf.py
    assert t5.tie_word_embeddings and t5.encoder_position_bias is not None


def test_load_weight_takes_a_hugging_face_directory_or_delegates(local_layout):
    model = GPTForPreTraining.from_pretrained(_fixture("gpt2"), max_seq_length=64)
    with flow.no_grad():
        for p in model.parameters():
            p.zero_()

    class Recorder:
        calls = []

        def load_weights_only(self, path):
            self.calls.append(path)

    load_weight(model, _fixture("gpt2"), Recorder())
    logits, ref = _run(model, "gpt2", ["input_ids"], "prediction_scores")
    assert np.abs(logits - ref["logits"]).max() < TOL and Recorder.calls == []
    load_weight(model, "output/model_final", Recorder())
    assert Recorder.calls == ["output/model_final"]
