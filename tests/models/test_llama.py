"""Llama against Hugging Face ``transformers``: logits, export, generation; plus training.

The fixture tests/fixtures/hf/llama (made by tests/fixtures/hf/make_hf_fixtures.py with
transformers 5.24) is a 2-block LlamaForCausalLM with grouped-query attention (4 query heads,
2 key/value heads), RMSNorm eps 1e-6 and an untied head; reference.npz holds its logits and
the tokens of greedy, beam-3, left-padded and repetition-penalty generation.
"""
import json
import os

import numpy as np
import oneflow as flow
import pytest
from safetensors.numpy import load_file

from libai.models import LlamaForCausalLM, LlamaModel
from libai.utils.distributed import ParallelLayout

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hf", "llama")
TINY = dict(vocab_size=64, hidden_size=32, hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, intermediate_size=48, max_position_embeddings=32)


@pytest.fixture(scope="module")
def llama():
    return (LlamaForCausalLM.from_pretrained(FIXTURE).eval(),
            np.load(os.path.join(FIXTURE, "reference.npz")))


def _logits(model, ids):
    return model(flow.tensor(ids))["prediction_scores"].numpy()


def test_logits_equal_transformers(llama):
    model, ref = llama
    np.testing.assert_allclose(_logits(model, ref["input_ids"]), ref["logits"], rtol=0, atol=1e-4)


def test_base_model_gives_the_hidden_states_the_head_reads(llama):
    model, ref = llama
    body = LlamaModel.from_pretrained(FIXTURE).eval()
    hidden = body(flow.tensor(ref["input_ids"])).numpy()
    head = load_file(os.path.join(FIXTURE, "model.safetensors"))["lm_head.weight"]
    np.testing.assert_allclose(hidden @ head.T, ref["logits"], rtol=0, atol=1e-4)


# generation against transformers' tokens: tests/inference/test_generation_hf_parity.py


def test_save_pretrained_writes_the_checkpoint_back(llama, tmp_path):
    model, ref = llama
    model.save_pretrained(str(tmp_path))
    original = load_file(os.path.join(FIXTURE, "model.safetensors"))
    written = load_file(os.path.join(str(tmp_path), "model.safetensors"))
    assert sorted(written) == sorted(original)
    for name, array in original.items():
        np.testing.assert_array_equal(written[name], array, err_msg=name)
    with open(os.path.join(FIXTURE, "config.json")) as f:
        want = json.load(f)
    with open(os.path.join(str(tmp_path), "config.json")) as f:
        got = json.load(f)
    for key in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                "num_attention_heads", "num_key_value_heads", "rms_norm_eps",
                "tie_word_embeddings", "rope_parameters", "model_type", "hidden_act"):
        assert got[key] == want[key], key
    again = LlamaForCausalLM.from_pretrained(str(tmp_path)).eval()
    np.testing.assert_array_equal(_logits(again, ref["input_ids"]), _logits(model, ref["input_ids"]))


def test_tied_head_exports_without_lm_head_and_reloads(local_layout, tmp_path):
    flow.manual_seed(0)
    model = LlamaForCausalLM(dict(TINY, tie_word_embeddings=True)).eval()
    assert "lm_head.weight" not in model.state_dict()
    ids = np.random.RandomState(0).randint(0, 64, size=(2, 5))
    model.save_pretrained(str(tmp_path))
    assert "lm_head.weight" not in load_file(os.path.join(str(tmp_path), "model.safetensors"))
    again = LlamaForCausalLM.from_pretrained(str(tmp_path)).eval()
    np.testing.assert_array_equal(_logits(again, ids), _logits(model, ids))
    # tied: the logits are the hidden states times the embedding table
    hidden = model.model(flow.tensor(ids)).numpy()
    table = model.model.embed_tokens.weight.numpy()
    np.testing.assert_allclose(_logits(model, ids), hidden @ table.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("change, message", [
    ({"hidden_act": "gelu"}, "SwiGLU"),
    ({"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}, "rope type"),
    ({"attention_bias": True}, "attention_bias"),
])
def test_unsupported_configs_are_refused_by_name(tmp_path, change, message):
    with open(os.path.join(FIXTURE, "config.json")) as f:
        cfg = dict(json.load(f), **change)
    with open(os.path.join(str(tmp_path), "config.json"), "w") as f:
        json.dump(cfg, f)
    os.symlink(os.path.abspath(os.path.join(FIXTURE, "model.safetensors")),
               os.path.join(str(tmp_path), "model.safetensors"))
    with pytest.raises(ValueError, match=message):
        LlamaForCausalLM.from_pretrained(str(tmp_path))


def test_head_counts_are_checked(local_layout):
    with pytest.raises(ValueError, match="num_key_value_heads=3"):
        LlamaForCausalLM(dict(TINY, num_key_value_heads=3))


def test_training_returns_lm_loss_and_the_loss_falls(local_layout):
    flow.manual_seed(0)
    model = LlamaForCausalLM(TINY)
    rng = np.random.RandomState(0)
    ids = rng.randint(0, 64, size=(4, 9))
    inputs, labels = flow.tensor(ids[:, :-1]), flow.tensor(ids[:, 1:])
    opt = flow.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    losses = []
    for _ in range(30):
        out = model(inputs, labels)
        assert set(out) == {"lm_loss"}
        opt.zero_grad()
        out["lm_loss"].backward()
        opt.step()
        losses.append(float(out["lm_loss"].numpy()))
    assert losses[0] == pytest.approx(np.log(64), abs=0.5)  # near-uniform at the start
    assert losses[-1] < 0.5 * losses[0]
    model.eval()
    assert set(model(inputs, labels)) == {"prediction_scores"}


def _parameter_count(cfg: dict) -> int:
    """Llama's parameter count from its shape, computed by hand."""
    h, n, v, f = cfg["hidden_size"], cfg["hidden_layers"], cfg["vocab_size"], cfg["intermediate_size"]
    kv = cfg["num_key_value_heads"] * h // cfg["num_attention_heads"]
    block = h * h * 2 + 2 * h * kv + 3 * h * f + 2 * h  # q, o, k, v, SwiGLU, two norms
    head = 0 if cfg["tie_word_embeddings"] else v * h
    return v * h + n * block + h + head


def test_presets_have_the_published_shapes():
    from configs.common.models.llama import llama_cfg

    with ParallelLayout.from_config({}, world_size=1, rank=0):
        tiny = LlamaForCausalLM(llama_cfg("tiny"))
    assert sum(p.numel() for p in tiny.parameters()) == _parameter_count(llama_cfg("tiny"))
    # Llama-2's published totals
    assert _parameter_count(llama_cfg("7b")) == 6_738_415_616
    assert _parameter_count(llama_cfg("13b")) == 13_015_864_320
    assert _parameter_count(llama_cfg("70b")) == 68_976_648_192
    with pytest.raises(ValueError, match="unknown Llama shape"):
        llama_cfg("8b")
