"""The decoder families configured from the Llama skeleton (Qwen2, ...) against transformers.

Each fixture tests/fixtures/hf/<family> was made by tests/fixtures/hf/make_hf_fixtures.py
(transformers 5.24, a tiny random model); reference.npz holds its logits and the tokens of
greedy, beam-3, left-padded and repetition-penalty generation. Checked per family: logits, the
four generations (with the key/value cache), that a cached step reads the cache, the export's
files equal to the fixture's, and the Auto class.
"""
import json
import os
import shutil

import numpy as np
import oneflow as flow
import pytest
from safetensors.numpy import load_file

from libai.models import (
    AutoModelForCausalLM, GemmaForCausalLM, MistralForCausalLM, Phi3ForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf")
FAMILIES = {
    "qwen2": Qwen2ForCausalLM, "mistral": MistralForCausalLM, "qwen3": Qwen3ForCausalLM,
    "gemma": GemmaForCausalLM, "phi3": Phi3ForCausalLM,
}
COMMON = dict(max_new_tokens=6, eos_token_id=2, pad_token_id=0)
GENERATIONS = {
    "greedy": lambda r: dict(input_ids=r["prompt"]),
    "beam3": lambda r: dict(input_ids=r["prompt"], num_beams=3),
    "padded_greedy": lambda r: dict(input_ids=r["padded_prompts"], attention_mask=r["padded_mask"]),
    "repetition_greedy": lambda r: dict(input_ids=r["prompt"], repetition_penalty=1.5),
}
_LOADED = {}


def _path(family):
    return os.path.join(FIXTURES, family)


def _load(family):
    if family not in _LOADED:
        _LOADED[family] = (FAMILIES[family].from_pretrained(_path(family)).eval(),
                           np.load(os.path.join(_path(family), "reference.npz")))
    return _LOADED[family]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_logits_equal_transformers(family):
    model, ref = _load(family)
    with flow.no_grad():
        logits = model(flow.tensor(ref["input_ids"]))["prediction_scores"].numpy()
    np.testing.assert_allclose(logits, ref["logits"], rtol=0, atol=1e-4)


@pytest.mark.parametrize("case", sorted(GENERATIONS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_generate_equals_transformers(family, case):
    model, ref = _load(family)
    tokens = model.generate(**GENERATIONS[case](ref), **COMMON, use_cache=True).numpy()
    np.testing.assert_array_equal(tokens, ref[case])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_cached_step_reads_the_cache(family):
    """One new token against the cache of the ones before gives the full forward's logits; the
    cache holds the key/value heads of every position so far."""
    model, ref = _load(family)
    ids = flow.tensor(ref["input_ids"])
    with flow.no_grad():
        first = model(ids[:, :5], use_cache=True)
        step = model(ids[:, 5:6], past_key_values=first["past_key_values"], use_cache=True)
    np.testing.assert_allclose(step["prediction_scores"].numpy()[:, 0], ref["logits"][:, 5],
                               rtol=0, atol=1e-4)
    key = step["past_key_values"][0][0]
    cfg = model.config
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    assert tuple(key.shape) == (2, cfg["num_key_value_heads"], 6, head_dim)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_save_pretrained_writes_the_fixture_files_back(family, tmp_path):
    model, _ = _load(family)
    model.save_pretrained(str(tmp_path))
    original = load_file(os.path.join(_path(family), "model.safetensors"))
    written = load_file(os.path.join(str(tmp_path), "model.safetensors"))
    assert sorted(written) == sorted(original)
    for name, array in original.items():
        np.testing.assert_array_equal(written[name], array, err_msg=name)
    with open(os.path.join(_path(family), "config.json")) as f:
        want = json.load(f)
    with open(os.path.join(str(tmp_path), "config.json")) as f:
        got = json.load(f)
    for key in sorted(set(want) - {"transformers_version", "dtype", "use_cache"}):
        assert got.get(key) == want[key], key


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_auto_class_builds_the_family(family):
    assert AutoModelForCausalLM.class_for(_path(family)) is FAMILIES[family]


def _with_config(tmp_path, family, change):
    out = tmp_path / "ckpt"
    shutil.copytree(_path(family), out)
    cfg = json.loads((out / "config.json").read_text())
    cfg.update(change)
    (out / "config.json").write_text(json.dumps(cfg))
    return str(out)


@pytest.mark.parametrize("family, change, message", [
    ("qwen2", {"use_sliding_window": True, "sliding_window": 4, "max_window_layers": 1},
     r"use_sliding_window=True \(sliding_window=4, max_window_layers=1\)"),
    ("qwen2", {"rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6}},
     r"rope_parameters=.*'yarn'"),
    ("qwen2", {"final_logit_softcapping": 30.0}, r"final_logit_softcapping=30\.0"),
    ("qwen2", {"attn_logit_softcapping": 50.0}, r"attn_logit_softcapping=50\.0"),
    ("qwen2", {"layer_types": ["sliding_attention", "full_attention"]},
     r"layer_types=\['sliding_attention', 'full_attention'\]"),
    ("mistral", {"layer_types": ["sliding_attention", "full_attention"]},
     r"layer_types=\['sliding_attention', 'full_attention'\] with sliding_window=3"),
    ("qwen3", {"use_sliding_window": True, "sliding_window": 4}, "use_sliding_window=True"),
    ("qwen3", {"attention_bias": True}, "attention_bias=True"),
    ("gemma", {"hidden_act": "silu"}, "hidden_act='silu'"),
    ("gemma", {"final_logit_softcapping": 30.0}, r"final_logit_softcapping=30\.0"),
    ("phi3", {"rope_parameters": {"rope_type": "longrope", "rope_theta": 1e4,
                                  "short_factor": [1.0], "long_factor": [1.0]}},
     r"rope_parameters=.*'longrope'"),
    ("phi3", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                                  "partial_rotary_factor": 0.5}}, "partial_rotary_factor"),
    ("mistral", {"sliding_window": [3, None]}, r"sliding_window=\[3, None\]"),
    ("mistral", {"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}},
     r"rope_parameters=.*'linear'"),
])
def test_unimplemented_mechanisms_are_refused_by_name(tmp_path, family, change, message):
    path = _with_config(tmp_path, family, change)
    with pytest.raises(ValueError, match=message):
        AutoModelForCausalLM.from_pretrained(path)


# published totals of the presets' models
PUBLISHED = {"qwen2_7b": 7_615_616_512, "mistral_7b": 7_241_732_096, "qwen3_8b": 8_190_735_360,
             "gemma_7b": 8_537_680_896, "phi3_mini": 3_821_079_552}


@pytest.mark.parametrize("preset", sorted(PUBLISHED))
def test_presets_plan_with_the_published_parameter_count(preset):
    """``--dry-run``'s planner takes each preset (TP=4 × PP=2 on 8 devices of 80 GiB) and counts
    the published model's parameters."""
    import libai
    from configs.common.models import llm_families
    from libai.config import LazyConfig

    cfg = LazyConfig.load(os.path.join(FIXTURES, "..", "..", "..", "configs", "gpt2_pretrain.py"))
    cfg.model = getattr(llm_families, preset)()
    layers = cfg.model.cfg["hidden_layers"]
    plan = libai.plan(cfg, nodes=1, devices_per_node=8, device_memory="80GiB", check_data=False,
                      overrides=[f"train.dist.pipeline_num_layers={layers}",
                                 "train.dist.tensor_parallel_size=4",
                                 "train.dist.pipeline_parallel_size=2"])
    assert plan.ok, plan.format()
    assert plan.model.num_params == PUBLISHED[preset]


def test_mistral_window_applies_in_training_and_changes_the_function():
    """The window binds: without it the logits past the window differ from transformers', and
    the training loss is the cross entropy of transformers' windowed logits."""
    model, ref = _load("mistral")
    ids = flow.tensor(ref["input_ids"])
    full = MistralForCausalLM.from_pretrained(_path("mistral"), sliding_window=None).eval()
    with flow.no_grad():
        unwindowed = full(ids)["prediction_scores"].numpy()
    window = model.config["sliding_window"]
    np.testing.assert_allclose(unwindowed[:, :window], ref["logits"][:, :window], atol=1e-4)
    assert np.abs(unwindowed[:, window:] - ref["logits"][:, window:]).max() > 1e-2
    labels = np.roll(ref["input_ids"], -1, axis=1)
    logits = ref["logits"].astype(np.float64)
    logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
        - logits.max(-1, keepdims=True)
    want = -np.take_along_axis(logp, labels[..., None], -1).mean()
    model.train()
    try:
        loss = model(ids, labels=flow.tensor(labels))["lm_loss"].numpy()
    finally:
        model.eval()
    np.testing.assert_allclose(loss, want, rtol=1e-5)


def test_lora_applies_by_module_name_to_qwen2_and_merges_into_an_export(tmp_path):
    """LoRA on Qwen2's biased query/key_value: only the adapters train (the biases and every
    base tensor stay), and the merged model exports a Qwen2 checkpoint with the same function."""
    from libai.models.utils.lora import apply_lora, merge_and_unload
    from libai.optim import get_default_optimizer_params
    from libai.utils.distributed import ParallelLayout

    model = Qwen2ForCausalLM.from_pretrained(_path("qwen2"))
    base = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with ParallelLayout.from_config({}, world_size=1, rank=0):
        names = apply_lora(model, ["query", "key_value"], rank=4, alpha=8)
    assert names == [f"model.layers.{i}.self_attention.{t}" for i in range(2)
                     for t in ("query", "key_value")]
    ids = np.random.RandomState(0).randint(3, 96, size=(4, 9))
    inputs, labels = flow.tensor(ids[:, :-1]), flow.tensor(ids[:, 1:])
    opt = flow.optim.AdamW(get_default_optimizer_params(model), lr=5e-2)
    model.train()
    for _ in range(3):
        loss = model(inputs, labels)["lm_loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    state = model.state_dict()
    for name, array in base.items():
        np.testing.assert_array_equal(state[name].numpy(), array, err_msg=name)
    with flow.no_grad():
        tuned = model(inputs)["prediction_scores"].numpy()
    merge_and_unload(model)
    model.save_pretrained(str(tmp_path))
    again = AutoModelForCausalLM.from_pretrained(str(tmp_path)).eval()
    with flow.no_grad():
        reloaded = again(inputs)["prediction_scores"].numpy()
    np.testing.assert_allclose(reloaded, tuned, rtol=1e-4, atol=5e-5)
    assert np.abs(reloaded - _load("qwen2")[0](inputs)["prediction_scores"].numpy()).max() > 1e-3


@pytest.mark.parametrize("case", ["greedy", "padded_greedy"])
def test_mistral_generates_past_the_window_without_the_cache_too(case):
    """Full recomputation at every step (no cache) slides the same window as cached decoding."""
    model, ref = _load("mistral")
    tokens = model.generate(**GENERATIONS[case](ref), **COMMON, use_cache=False).numpy()
    np.testing.assert_array_equal(tokens, ref[case])
