"""Noising for pre-training objectives: BERT's masked LM and T5's span corruption.

Both take an explicit ``numpy.random.Generator`` so that a sample is a pure function of
(seed, sample index): the same sample comes back after a restart, whatever order samples
are read in.
"""
from typing import List, Sequence, Tuple

import numpy as np

__all__ = ["mask_tokens", "num_to_mask", "random_spans_noise_mask", "span_corrupt", "t5_input_length"]


def num_to_mask(num_candidates: int, mask_prob: float) -> int:
    """Tokens to mask among ``num_candidates``: ``mask_prob`` of them rounded half up, at least one."""
    if num_candidates <= 0:
        return 0
    return max(1, int(np.floor(num_candidates * mask_prob + 0.5)))


def mask_tokens(
    tokens: np.ndarray,
    candidates: np.ndarray,
    rng: np.random.Generator,
    mask_prob: float,
    mask_id: int,
    vocab_size: int,
    special_ids: Sequence[int] = (),
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BERT masking: pick :func:`num_to_mask` of the ``candidates`` positions, then replace
    80% by ``mask_id``, 10% by a random non-special token, and leave 10% unchanged.

    Returns ``(noised tokens, masked positions sorted, original ids at those positions)``.
    Leaving some picked tokens unchanged or random keeps the model from learning that only
    ``[MASK]`` positions matter, since ``[MASK]`` never appears at fine-tuning time.
    """
    tokens = np.array(tokens, dtype=np.int64)
    candidates = np.asarray(candidates, dtype=np.int64)
    count = num_to_mask(len(candidates), mask_prob)
    positions = np.sort(rng.choice(candidates, size=count, replace=False)) if count else candidates[:0]
    labels = tokens[positions].copy()
    action = rng.random(count)
    to_mask = positions[action < 0.8]
    to_random = positions[(action >= 0.8) & (action < 0.9)]
    tokens[to_mask] = mask_id
    if len(to_random):
        tokens[to_random] = _random_regular_tokens(rng, len(to_random), vocab_size, special_ids)
    return tokens, positions, labels


def _random_regular_tokens(
    rng: np.random.Generator, count: int, vocab_size: int, special_ids: Sequence[int]
) -> np.ndarray:
    # Draw from the ids that are not special, by mapping a draw over the regular ids only.
    special = np.unique(np.asarray([s for s in special_ids if 0 <= s < vocab_size], dtype=np.int64))
    regular = vocab_size - len(special)
    if regular <= 0:
        raise ValueError("the vocabulary has no regular (non-special) token to substitute")
    draws = rng.integers(0, regular, size=count)
    # Shift each draw past the special ids at or below it.
    for s in special:
        draws[draws >= s] += 1
    return draws


def random_spans_noise_mask(
    length: int, noise_density: float, mean_span_length: float, rng: np.random.Generator
) -> np.ndarray:
    """Boolean mask of ``length`` with ``round(length * noise_density)`` noise tokens in
    ``round(noise / mean_span_length)`` spans; spans and the gaps between them have random
    lengths, and the text always starts with a non-noise gap.
    """
    num_noise = int(np.floor(length * noise_density + 0.5))
    num_noise = min(max(num_noise, 1), length - 1)
    num_spans = max(1, int(np.floor(num_noise / mean_span_length + 0.5)))
    num_spans = min(num_spans, num_noise, length - num_noise)
    noise_lengths = _random_segmentation(num_noise, num_spans, rng)
    keep_lengths = _random_segmentation(length - num_noise, num_spans, rng)
    mask = np.zeros(length, dtype=bool)
    position = 0
    for keep, noise in zip(keep_lengths, noise_lengths):
        position += keep
        mask[position : position + noise] = True
        position += noise
    return mask


def _random_segmentation(total: int, parts: int, rng: np.random.Generator) -> np.ndarray:
    """``parts`` positive integers summing to ``total``, uniformly over such compositions."""
    cuts = np.sort(rng.choice(np.arange(1, total), size=parts - 1, replace=False)) if parts > 1 else []
    bounds = np.concatenate([[0], cuts, [total]]).astype(np.int64)
    return np.diff(bounds)


def span_corrupt(
    tokens: np.ndarray, noise_mask: np.ndarray, sentinel_ids: Sequence[int]
) -> Tuple[np.ndarray, np.ndarray]:
    """T5 span corruption: each noise span becomes one sentinel in the encoder input, and the
    target lists every sentinel followed by the tokens it hides.

    ``tokens = a b c d e``, noise ``c d`` → encoder ``a b <S0> e``, target ``<S0> c d``.
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    starts = np.flatnonzero(noise_mask & ~np.concatenate([[False], noise_mask[:-1]]))
    if len(starts) > len(sentinel_ids):
        raise ValueError(
            f"{len(starts)} noise spans but only {len(sentinel_ids)} sentinel ids; "
            "give more sentinel ids or a shorter max_seq_length"
        )
    is_start = np.zeros(len(tokens), dtype=bool)
    is_start[starts] = True
    encoder: List[int] = []
    target: List[int] = []
    span = -1
    for token, noisy, first in zip(tokens.tolist(), noise_mask.tolist(), is_start.tolist()):
        if not noisy:
            encoder.append(token)
            continue
        if first:
            span += 1
            encoder.append(int(sentinel_ids[span]))
            target.append(int(sentinel_ids[span]))
        target.append(token)
    return np.asarray(encoder, dtype=np.int64), np.asarray(target, dtype=np.int64)


def t5_input_length(
    max_encoder_length: int, noise_density: float, mean_span_length: float
) -> Tuple[int, int, int]:
    """The longest raw text that fits ``max_encoder_length`` after corruption (plus one EOS),
    the decoder length it then needs (sentinels + hidden tokens + one EOS) and its span count.
    All three only grow with the raw length, so shorter texts fit too."""
    def lengths(raw: int) -> Tuple[int, int, int]:
        noise = min(max(int(np.floor(raw * noise_density + 0.5)), 1), raw - 1)
        spans = max(1, int(np.floor(noise / mean_span_length + 0.5)))
        spans = min(spans, noise, raw - noise)
        return raw - noise + spans + 1, noise + spans + 1, spans

    if max_encoder_length < 3:
        raise ValueError(f"max_seq_length must be >= 3 for span corruption, got {max_encoder_length}")
    raw = 2
    while lengths(raw + 1)[0] <= max_encoder_length:
        raw += 1
    _, decoder_length, spans = lengths(raw)
    return raw, decoder_length, spans
