"""Generation matches Hugging Face ``transformers``' ``generate`` token for token.

The references in tests/fixtures/hf/<model>/reference.npz were produced by
tests/fixtures/hf/make_hf_fixtures.py (transformers 5.24) with max_new_tokens=6,
eos_token_id=2, pad_token_id=0: greedy search, beam search with num_beams=3, greedy search
over a left-padded batch, and greedy search with repetition_penalty=1.5. Each is checked with
the key/value cache and without it (full recomputation every step).
"""
import os

import numpy as np
import pytest

from libai.models import GPTForPreTraining, GPTModel, LlamaForCausalLM

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hf")
COMMON = dict(max_new_tokens=6, eos_token_id=2, pad_token_id=0)


@pytest.fixture(scope="module")
def gpt2():
    return (GPTForPreTraining.from_pretrained(os.path.join(FIXTURES, "gpt2")).eval(),
            np.load(os.path.join(FIXTURES, "gpt2", "reference.npz")))


CASES = {
    "greedy": lambda r: dict(input_ids=r["prompt"]),
    "beam3": lambda r: dict(input_ids=r["prompt"], num_beams=3),
    "padded_greedy": lambda r: dict(input_ids=r["padded_prompts"], attention_mask=r["padded_mask"]),
    "repetition_greedy": lambda r: dict(input_ids=r["prompt"], repetition_penalty=1.5),
}


@pytest.fixture(scope="module")
def llama():
    return (LlamaForCausalLM.from_pretrained(os.path.join(FIXTURES, "llama")).eval(),
            np.load(os.path.join(FIXTURES, "llama", "reference.npz")))


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "no_cache"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_causal_lm_generate_equals_transformers(request, family, case, use_cache):
    model, ref = request.getfixturevalue(family)
    tokens = model.generate(**CASES[case](ref), **COMMON, use_cache=use_cache).numpy()
    np.testing.assert_array_equal(tokens, ref[case])


def test_gpt_model_body_generates_the_same_as_the_pretraining_wrapper(gpt2):
    model, ref = gpt2
    body = GPTModel.from_pretrained(os.path.join(FIXTURES, "gpt2")).eval()
    np.testing.assert_array_equal(body.generate(ref["prompt"], **COMMON).numpy(), ref["greedy"])


def test_defaults_come_from_the_checkpoint_config(gpt2):
    """eos/pad ids default to config.json's (2 and 0 in the fixture)."""
    model, ref = gpt2
    tokens = model.generate(ref["padded_prompts"], attention_mask=ref["padded_mask"], max_new_tokens=6)
    np.testing.assert_array_equal(tokens.numpy(), ref["padded_greedy"])


def test_mask_is_inferred_from_pad_tokens_as_transformers_does(gpt2):
    """Without attention_mask, prompt positions holding pad_token_id (!= eos) are padding."""
    model, ref = gpt2
    tokens = model.generate(ref["padded_prompts"], **COMMON)
    np.testing.assert_array_equal(tokens.numpy(), ref["padded_greedy"])
