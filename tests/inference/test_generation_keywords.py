"""generate()'s minimum-length keywords (Hugging Face's meaning) and the refusal, by name, of
transformers keywords libai does not implement."""
import numpy as np
import oneflow as flow
import pytest

from libai.models.utils.generation import MinLengthLogitsProcessor
from tiny_models import prompts, tiny_gpt


@pytest.fixture(scope="module")
def gpt():
    return tiny_gpt()


def test_min_length_processor_blocks_only_the_end_tokens_until_the_length():
    scores = np.arange(12, dtype=np.float32).reshape(2, 6)
    short = flow.zeros(2, 3, dtype=flow.int64)
    out = MinLengthLogitsProcessor(5, [2, 4])(short, flow.tensor(scores)).numpy()
    expected = scores.copy()
    expected[:, [2, 4]] = -np.inf
    np.testing.assert_array_equal(out, expected)
    long_enough = flow.zeros(2, 5, dtype=flow.int64)
    np.testing.assert_array_equal(
        MinLengthLogitsProcessor(5, 2)(long_enough, flow.tensor(scores)).numpy(), scores)


def _greedy_without(model, prompt, banned, steps):
    """Greedy decoding by full forward passes, with ``banned`` never chosen: the reference."""
    tokens = np.array(prompt)
    for _ in range(steps):
        logits = model(flow.tensor(tokens))["prediction_scores"][:, -1].numpy()
        logits[:, banned] = -np.inf
        tokens = np.concatenate([tokens, logits.argmax(-1)[:, None]], axis=1)
    return tokens


@pytest.mark.parametrize("keyword", ["min_new_tokens", "min_length"])
def test_min_new_tokens_delays_the_end_of_sequence(gpt, keyword):
    prompt = prompts(1, batch=1)
    first = int(gpt.generate(prompt, max_new_tokens=1).numpy()[0, -1])
    # With the first greedy token as end-of-sequence, generation stops after one token...
    stopped = gpt.generate(prompt, max_new_tokens=8, eos_token_id=first, pad_token_id=0).numpy()
    assert stopped.shape[1] == prompt.shape[1] + 1
    # ... unless the end may not come before 4 new tokens: then the first 4 are the greedy
    # choices among the other tokens.
    least = 4 if keyword == "min_new_tokens" else prompt.shape[1] + 4
    out = gpt.generate(prompt, max_new_tokens=8, eos_token_id=first, pad_token_id=0,
                       **{keyword: least}).numpy()
    new = out[0, prompt.shape[1]:]
    assert len(new) >= 4 and first not in new[:4].tolist()
    reference = _greedy_without(gpt, prompt, [first], 4)
    np.testing.assert_array_equal(out[:, :prompt.shape[1] + 4], reference)


def test_min_new_tokens_also_applies_to_beam_search(gpt):
    prompt = prompts(2, batch=1)
    first = int(gpt.generate(prompt, max_new_tokens=1).numpy()[0, -1])
    out = gpt.generate(prompt, max_new_tokens=6, num_beams=2, eos_token_id=first, pad_token_id=0,
                       min_new_tokens=3).numpy()
    assert first not in out[0, prompt.shape[1]:prompt.shape[1] + 3].tolist()


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_min_new_tokens_must_be_a_non_negative_integer(gpt, bad):
    with pytest.raises(ValueError, match="min_new_tokens must be a non-negative integer"):
        gpt.generate(prompts(1, batch=1), max_new_tokens=2, min_new_tokens=bad)


def test_transformers_keywords_libai_lacks_are_refused_by_name(gpt):
    with pytest.raises(TypeError, match="no_repeat_ngram_size.*transformers"):
        gpt.generate(prompts(1, batch=1), max_new_tokens=2, no_repeat_ngram_size=2)
    with pytest.raises(TypeError, match="max_new_token: not a generate"):
        gpt.generate(prompts(1, batch=1), max_new_token=2)
