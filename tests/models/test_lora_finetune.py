"""LoRA fine-tuning of a loaded Llama: only the adapter moves, only the adapter is saved,
merging computes the same function, and the adapter file round-trips."""
import os

import numpy as np
import oneflow as flow
import pytest
from safetensors.numpy import load_file

from libai.config import LazyCall, instantiate
from libai.models import LlamaForCausalLM
from libai.models.utils.lora import (
    ADAPTER_WEIGHTS_NAME, apply_lora, load_lora, lora_model, lora_modules, merge_and_unload,
    merge_lora, save_lora, unmerge_lora,
)
from libai.optim import get_default_optimizer_params
from libai.utils.distributed import ParallelLayout

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hf", "llama")
TARGETS = ["query", "key_value"]


def _batch(seed=0):
    ids = np.random.RandomState(seed).randint(3, 96, size=(4, 9))
    return flow.tensor(ids[:, :-1]), flow.tensor(ids[:, 1:])


def _logits(model, ids):
    return model(ids)["prediction_scores"].numpy()


def _finetune(model, steps=8):
    inputs, labels = _batch()
    params = get_default_optimizer_params(model)
    opt = flow.optim.AdamW(params, lr=5e-2)
    model.train()
    losses = []
    for _ in range(steps):
        loss = model(inputs, labels)["lm_loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.numpy()))
    model.eval()
    return losses


@pytest.fixture
def tuned():
    """The fixture Llama, LoRA on attention, fine-tuned 8 steps: (model, base arrays, losses)."""
    model = LlamaForCausalLM.from_pretrained(FIXTURE)
    base = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with ParallelLayout.from_config({}, world_size=1, rank=0):
        names = apply_lora(model, TARGETS, rank=4, alpha=8)
    assert names == [f"model.layers.{i}.self_attention.{t}" for i in range(2) for t in TARGETS]
    losses = _finetune(model)
    return model, base, losses


def test_only_adapter_weights_change_and_the_loss_falls(tuned):
    model, base, losses = tuned
    assert losses[-1] < losses[0] - 0.5
    state = model.state_dict()
    adapters = [k for k in state if ".lora_" in k]
    assert len(adapters) == 2 * 2 * len(TARGETS)
    assert sorted(set(state) - set(adapters)) == sorted(base)  # base names unchanged
    for name, array in base.items():
        np.testing.assert_array_equal(state[name].numpy(), array, err_msg=name)  # bit-identical
    for name in adapters:
        if ".lora_B." in name:  # B started at zero
            assert np.abs(state[name].numpy()).max() > 0, name


def test_frozen_base_is_left_out_of_the_optimizer(tuned):
    model, _, _ = tuned
    trainable = {id(p) for group in get_default_optimizer_params(model) for p in group["params"]}
    names = {n for n, p in model.named_parameters() if id(p) in trainable}
    assert names and all(".lora_A." in n or ".lora_B." in n for n in names)


def test_saved_adapter_holds_only_adapter_tensors_and_loads_back(tuned, tmp_path):
    model, _, _ = tuned
    save_lora(model, str(tmp_path))
    saved = load_file(os.path.join(str(tmp_path), ADAPTER_WEIGHTS_NAME))
    expected = {f"{n}.{part}.weight" for n in lora_modules(model) for part in ("lora_A", "lora_B")}
    assert set(saved) == expected
    for name, array in saved.items():
        np.testing.assert_array_equal(array, model.state_dict()[name].numpy())
    # a fresh LoRA model on the same base computes the tuned function once the adapter loads
    fresh = LlamaForCausalLM.from_pretrained(FIXTURE).eval()
    with ParallelLayout.from_config({}, world_size=1, rank=0):
        apply_lora(fresh, TARGETS, rank=4, alpha=8)
    ids, _ = _batch(1)
    assert not np.allclose(_logits(fresh, ids), _logits(model, ids))
    load_lora(fresh, str(tmp_path))
    np.testing.assert_array_equal(_logits(fresh, ids), _logits(model, ids))


def test_adapter_of_another_shape_is_refused_by_name(tuned, tmp_path):
    model, _, _ = tuned
    save_lora(model, str(tmp_path))
    other = LlamaForCausalLM.from_pretrained(FIXTURE)
    with ParallelLayout.from_config({}, world_size=1, rank=0):
        apply_lora(other, ["query"], rank=2)
    with pytest.raises(ValueError, match=r"unexpected \[.*key_value\.lora_A\.weight.*other shapes"):
        load_lora(other, str(tmp_path))


def test_merge_gives_the_unmerged_outputs(tuned):
    model, base, _ = tuned
    ids, _ = _batch(2)
    before = _logits(model, ids)
    merge_lora(model)
    np.testing.assert_allclose(_logits(model, ids), before, rtol=1e-4, atol=5e-5)
    unmerge_lora(model)
    name = "model.layers.0.self_attention.query.weight"
    np.testing.assert_allclose(model.state_dict()[name].numpy(), base[name], atol=1e-6)


def test_merge_and_unload_restores_plain_layers_that_export(tuned, tmp_path):
    model, base, _ = tuned
    ids, _ = _batch(3)
    before = _logits(model, ids)
    merge_and_unload(model)
    assert not lora_modules(model)
    assert sorted(model.state_dict()) == sorted(base)
    model.save_pretrained(str(tmp_path))
    again = LlamaForCausalLM.from_pretrained(str(tmp_path)).eval()
    np.testing.assert_allclose(_logits(again, ids), before, rtol=1e-4, atol=5e-5)


def test_no_matching_module_names_the_available_ones(local_layout):
    model = LlamaForCausalLM(dict(vocab_size=32, hidden_size=16, hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=32))
    with pytest.raises(ValueError, match=r"no Linear layer .*\['q_proj'\].*self_attention\.query"):
        apply_lora(model, ["q_proj"])


def test_config_entry_loads_base_weights_then_adds_the_adapter(local_layout):
    node = LazyCall(lora_model)(
        model=LazyCall(LlamaForCausalLM)(cfg=dict(
            vocab_size=96, hidden_size=32, hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
            rms_norm_eps=1e-6)),
        target_modules=TARGETS, rank=4, alpha=8, base_weights=FIXTURE,
    )
    model = instantiate(node).eval()
    reference = np.load(os.path.join(FIXTURE, "reference.npz"))
    np.testing.assert_allclose(_logits(model, flow.tensor(reference["input_ids"])),
                               reference["logits"], rtol=0, atol=1e-4)  # B = 0: the base model
    assert len(lora_modules(model)) == 4


def test_config_entry_loads_a_saved_adapter(tuned, tmp_path):
    model, _, _ = tuned
    save_lora(model, str(tmp_path))
    with ParallelLayout.from_config({}, world_size=1, rank=0):
        rebuilt = lora_model(LlamaForCausalLM.from_pretrained(FIXTURE), TARGETS, rank=4, alpha=8,
                             adapter=str(tmp_path)).eval()
    ids, _ = _batch(4)
    np.testing.assert_array_equal(_logits(rebuilt, ids), _logits(model, ids))
