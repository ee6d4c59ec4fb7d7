"""ONNX export (libai.models.utils.onnx_export, tools/export_onnx.py): the exported GPT-2 and
BERT graphs, run by onnxruntime, give the logits of Hugging Face transformers' reference
outputs committed with the fixtures (tests/fixtures/hf) and of the libai models themselves;
inputs are named after forward()'s arguments, shapes are fixed per export, and failures name
their cause."""
import importlib.util
import os

import numpy as np
import oneflow as flow
import onnx
import pytest

from libai.models import BertForClassification, BertForPreTraining, GPTForPreTraining
from libai.models.utils import export_onnx
from libai.models.utils.onnx_export import (
    OnnxExportError, example_token_inputs, run_onnx,
)
from libai.utils.distributed import ParallelLayout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "hf")
TOL = 1e-4
BERT_INPUTS = {"input_ids": "input_ids", "attention_mask": "attention_mask",
               "tokentype_ids": "token_type_ids"}  # forward() argument -> reference.npz key


def _reference(name):
    return np.load(os.path.join(FIXTURES, name, "reference.npz"))


def _tensors(arrays):
    return {name: flow.tensor(value) for name, value in arrays.items()}


def _eager_logits(model, inputs, key="prediction_scores"):
    with flow.no_grad():
        return model.eval()(**inputs)[key].numpy()


def _tiny(cls, **sizes):
    args = dict(vocab_size=64, hidden_size=16, hidden_layers=2, num_attention_heads=2,
                intermediate_size=32, max_seq_length=32, initializer_range=0.5)
    args.update(sizes)
    with ParallelLayout.from_config({}, world_size=1, rank=0):
        flow.manual_seed(0)
        return cls(**args)


def test_gpt2_fixture_matches_transformers(tmp_path):
    ref = _reference("gpt2")
    model = GPTForPreTraining.from_pretrained(os.path.join(FIXTURES, "gpt2"))
    path = str(tmp_path / "gpt2.onnx")
    result = export_onnx(model, path, {"input_ids": flow.tensor(ref["input_ids"])})
    logits = run_onnx(path, {"input_ids": ref["input_ids"]})
    assert logits.shape == ref["logits"].shape
    assert np.abs(logits - ref["logits"]).max() < TOL
    assert result.max_abs_diff is not None and result.max_abs_diff < TOL
    graph = onnx.load(path).graph
    assert [i.name for i in graph.input] == ["input_ids"]
    assert [o.name for o in graph.output] == ["logits"]
    assert result.input_shapes == (tuple(ref["input_ids"].shape),)


@pytest.mark.parametrize("fixture,cls,ref_key", [
    ("bert", BertForPreTraining, "prediction_logits"),
    ("bert_classifier", BertForClassification, "logits"),
])
def test_bert_fixtures_with_padding_match_transformers(tmp_path, fixture, cls, ref_key):
    ref = _reference(fixture)
    assert (ref["attention_mask"] == 0).any()  # the padding path is exercised
    arrays = {ours: ref[theirs] for ours, theirs in BERT_INPUTS.items()}
    model = cls.from_pretrained(os.path.join(FIXTURES, fixture))
    path = str(tmp_path / f"{fixture}.onnx")
    result = export_onnx(model, path, _tensors(arrays))
    assert result.input_names == ("input_ids", "attention_mask", "tokentype_ids")
    logits = run_onnx(path, arrays)
    assert np.abs(logits - ref[ref_key]).max() < TOL


def test_gpt_with_left_padding_mask_matches_eager(tmp_path):
    ref = _reference("gpt2")
    model = GPTForPreTraining.from_pretrained(os.path.join(FIXTURES, "gpt2"))
    ids = ref["input_ids"]
    mask = np.ones_like(ids)
    mask[0, :3] = 0  # left padding of the first prompt
    arrays = {"input_ids": ids, "attention_mask": mask}
    path = str(tmp_path / "gpt2_mask.onnx")
    export_onnx(model, path, _tensors(arrays))
    logits = run_onnx(path, arrays)
    expected = _eager_logits(model, _tensors(arrays))
    assert np.abs(logits - expected).max() < TOL
    # the mask matters: the first row differs from the unmasked reference, the second does not
    assert np.abs(logits[0] - ref["logits"][0]).max() > 1e-2
    assert np.abs(logits[1] - ref["logits"][1]).max() < TOL


@pytest.mark.parametrize("cls", [GPTForPreTraining, BertForPreTraining])
def test_tiny_models_two_shapes_each_need_their_own_export(tmp_path, cls):
    model = _tiny(cls)
    files = {}
    for batch, seq in ((1, 5), (3, 9)):
        inputs = example_token_inputs(model, batch, seq, seed=batch)
        files[batch] = (str(tmp_path / f"{batch}x{seq}.onnx"), inputs)
        export_onnx(model, files[batch][0], inputs)
        logits = run_onnx(files[batch][0], {n: t.numpy() for n, t in inputs.items()})
        assert logits.shape == (batch, seq, 64)
        assert np.abs(logits - _eager_logits(model, inputs)).max() < TOL
    small_path, _ = files[1]
    other = {n: t.numpy() for n, t in files[3][1].items()}
    with pytest.raises(ValueError, match=r"exported for input_ids of shape \(1, 5\), got \(3, 9\)"):
        run_onnx(small_path, other)


def test_example_inputs_follow_forward_and_vocabulary():
    gpt, bert = _tiny(GPTForPreTraining, vocab_size=40), _tiny(BertForPreTraining)
    gpt_inputs = example_token_inputs(gpt, 2, 7)
    assert list(gpt_inputs) == ["input_ids"]
    ids = gpt_inputs["input_ids"].numpy()
    assert ids.shape == (2, 7) and ids.dtype == np.int64 and 0 <= ids.min() and ids.max() < 40
    bert_inputs = example_token_inputs(bert, 2, 7)
    assert list(bert_inputs) == ["input_ids", "attention_mask"]
    assert (bert_inputs["attention_mask"].numpy() == 1).all()
    with pytest.raises(ValueError, match="no example rule for input"):
        example_token_inputs(bert, 1, 4, names=["input_ids", "pixel_values"])


def test_export_keeps_training_mode_and_numpy_untouched(tmp_path):
    model = _tiny(GPTForPreTraining).train()
    export_onnx(model, str(tmp_path / "m.onnx"), example_token_inputs(model, 1, 4))
    assert model.training
    assert "bool" not in np.__dict__  # the converter's np.bool alias was only lent for its import


class _CumSum(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = flow.nn.Parameter(flow.ones(4))

    def forward(self, x):
        return flow.cumsum(x * self.scale, dim=1)


def test_unsupported_op_is_named(tmp_path):
    path = tmp_path / "cumsum.onnx"
    with pytest.raises(OnnxExportError, match=r"no ONNX mapping for the OneFlow op\(s\) \['cumsum'\]"):
        export_onnx(_CumSum(), str(path), {"x": flow.randn(2, 4)})
    assert not path.exists()


def test_bad_arguments_are_refused_and_a_global_model_is_left_as_it_was(tmp_path):
    model = _tiny(GPTForPreTraining)
    inputs = example_token_inputs(model, 1, 4)
    path = str(tmp_path / "m.onnx")
    with pytest.raises(ValueError, match="opsets 13 to 17"):
        export_onnx(model, path, inputs, opset=11)
    with pytest.raises(KeyError, match="output_key='logits' is not among"):
        export_onnx(model, path, inputs, output_key="logits")
    # a one-process model is global (as in LiBai); export traces a local view of it and hands
    # it back unchanged: the same parameter objects, still global
    params = dict(model.named_parameters())
    assert all(p.is_global for p in params.values())
    export_onnx(model, path, inputs)
    after = dict(model.named_parameters())
    assert after.keys() == params.keys() and all(after[n] is p for n, p in params.items())
    assert all(p.is_global for p in model.parameters())
    assert all(m.layout.is_global for m in model.modules() if hasattr(m, "layout"))


def test_check_refuses_a_file_that_computes_other_values(tmp_path, monkeypatch):
    import libai.models.utils.onnx_export as onnx_export

    real = onnx_export.run_onnx
    monkeypatch.setattr(onnx_export, "run_onnx", lambda path, inputs: real(path, inputs) + 0.5)
    model = _tiny(GPTForPreTraining)
    with pytest.raises(OnnxExportError, match=r"differs from the model's by 0\.[45]\d* .*so the file was removed"):
        export_onnx(model, str(tmp_path / "m.onnx"), example_token_inputs(model, 1, 4))
    assert not (tmp_path / "m.onnx").exists()


def _load_tool():
    spec = importlib.util.spec_from_file_location("export_onnx_tool", os.path.join(ROOT, "tools", "export_onnx.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_tool_exports_hugging_face_and_config_sources(tmp_path):
    tool = _load_tool()
    gpt_dir = os.path.join(FIXTURES, "gpt2")
    ref = _reference("gpt2")
    batch, seq = ref["input_ids"].shape
    outputs = {"hf": tmp_path / "hf.onnx", "cfg": tmp_path / "cfg.onnx"}
    config = os.path.join(ROOT, "configs", "common", "models", "gpt.py")
    shape = ["--batch-size", str(batch), "--seq-length", str(seq)]
    assert tool.main(["--hf", gpt_dir, "--output", str(outputs["hf"])] + shape) == 0
    assert tool.main(["--config-file", config, "--weights", gpt_dir,
                      "--output", str(outputs["cfg"])] + shape) == 0
    for path in outputs.values():
        logits = run_onnx(str(path), {"input_ids": ref["input_ids"]})
        assert np.abs(logits - ref["logits"]).max() < TOL


def test_tool_exports_a_libai_training_output_dir(tmp_path):
    """config.yaml + model_final, as a training run leaves them: the exported file computes the
    saved model's logits."""
    from omegaconf import OmegaConf

    from libai.config import LazyCall, LazyConfig, instantiate
    from libai.utils.checkpoint import Checkpointer

    tool = _load_tool()
    sizes = dict(vocab_size=64, hidden_size=16, hidden_layers=1, num_attention_heads=2,
                 intermediate_size=32, max_seq_length=16)
    cfg = OmegaConf.create({"model": LazyCall(GPTForPreTraining)(cfg=sizes)})
    with ParallelLayout.from_config({}, world_size=1, rank=0):
        flow.manual_seed(3)
        model = instantiate(cfg.model)
    Checkpointer(model, str(tmp_path)).save("model_final")
    LazyConfig.save(cfg, str(tmp_path / "config.yaml"))
    out = tmp_path / "gpt.onnx"
    assert tool.main(["--config-file", str(tmp_path), "--output", str(out),
                      "--batch-size", "2", "--seq-length", "6"]) == 0
    ids = np.arange(12, dtype=np.int64).reshape(2, 6) * 5 % 64
    expected = _eager_logits(model, {"input_ids": flow.tensor(ids)})
    assert np.abs(run_onnx(str(out), {"input_ids": ids}) - expected).max() < TOL
