"""Sampling and the logits processors: reproducible with a seeded generator, and each
processor equal to a NumPy computation of its definition."""
import numpy as np
import oneflow as flow
import pytest

from libai.models.utils.generation import (
    RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper,
    build_processors,
)
from tiny_models import prompts, tiny_gpt


@pytest.fixture(scope="module")
def gpt():
    return tiny_gpt()


def _sample(model, seed, **kwargs):
    generator = flow.Generator()
    generator.manual_seed(seed)
    return model.generate(prompts(1), max_new_tokens=10, do_sample=True, generator=generator,
                          **kwargs).numpy()


def test_sampling_with_a_fixed_seed_is_reproducible(gpt):
    np.testing.assert_array_equal(_sample(gpt, 11, top_k=0), _sample(gpt, 11, top_k=0))
    draws = {_sample(gpt, seed, top_k=0, temperature=2.0).tobytes() for seed in range(4)}
    assert len(draws) > 1, "different seeds should draw different tokens"


def test_beam_sampling_is_reproducible(gpt):
    first = _sample(gpt, 5, num_beams=2)
    np.testing.assert_array_equal(first, _sample(gpt, 5, num_beams=2))


@pytest.mark.parametrize("use_cache", [True, False])
def test_top_k_1_sampling_equals_greedy(gpt, use_cache):
    greedy = gpt.generate(prompts(1), max_new_tokens=10).numpy()
    np.testing.assert_array_equal(_sample(gpt, 3, top_k=1, use_cache=use_cache), greedy)


SCORES = np.array([[0.5, -1.0, 2.0, 1.5, -0.2, 0.0], [3.0, 1.0, -2.0, 0.1, 0.2, -0.5]], np.float32)
SEEN = np.array([[1, 2, 2], [0, 4, 5]])


def _apply(processor):
    return processor(flow.tensor(SEEN), flow.tensor(SCORES)).numpy()


def test_repetition_penalty_divides_positive_and_multiplies_negative_seen_scores():
    expected = SCORES.copy()
    for row, seen in enumerate(SEEN):
        for token in set(seen):
            s = SCORES[row, token]
            expected[row, token] = s / 2.0 if s > 0 else s * 2.0
    np.testing.assert_allclose(_apply(RepetitionPenaltyLogitsProcessor(2.0)), expected)


def test_temperature_divides_scores():
    np.testing.assert_allclose(_apply(TemperatureLogitsWarper(0.5)), SCORES / 0.5)


def test_top_k_keeps_the_k_best():
    out = _apply(TopKLogitsWarper(2))
    for row in range(2):
        kept = set(np.argsort(-SCORES[row])[:2])
        for token in range(6):
            assert (out[row, token] == SCORES[row, token]) if token in kept else out[row, token] == -np.inf


def test_top_p_keeps_the_smallest_set_reaching_p():
    probs = np.exp(SCORES) / np.exp(SCORES).sum(-1, keepdims=True)
    out = _apply(TopPLogitsWarper(0.8))
    for row in range(2):
        order = np.argsort(-probs[row])
        mass, kept = 0.0, set()
        for token in order:  # add tokens, best first, until the mass reaches 0.8
            kept.add(token)
            mass += probs[row, token]
            if mass >= 0.8:
                break
        assert {t for t in range(6) if out[row, t] != -np.inf} == kept


def test_processor_list_follows_transformers_order_and_skips_no_ops():
    names = [type(p).__name__ for p in build_processors(
        do_sample=True, num_beams=1, temperature=0.7, top_k=5, top_p=0.9, repetition_penalty=1.2)]
    assert names == ["RepetitionPenaltyLogitsProcessor", "TemperatureLogitsWarper",
                     "TopKLogitsWarper", "TopPLogitsWarper"]
    assert build_processors(do_sample=False, num_beams=1, temperature=0.7, top_k=5, top_p=0.9,
                            repetition_penalty=1.0) == []
    with pytest.raises(ValueError, match="temperature"):
        TemperatureLogitsWarper(0.0)
