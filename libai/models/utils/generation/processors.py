"""Logits processors: the per-step score edits of generation, with Hugging Face's semantics.

Each processor is a callable ``(input_ids [rows, len], scores [rows, vocab]) -> scores`` on
local tensors. Greedy search and sampling apply them to the raw next-token logits; beam search
applies them to the log-probabilities (as ``transformers`` does). The order of the list
:func:`build_processors` makes is Hugging Face's: repetition penalty first, the minimum length,
then, only when sampling, temperature, top-k and top-p.
"""
from typing import List, Optional

import oneflow as flow

__all__ = [
    "LogitsProcessor",
    "LogitsProcessorList",
    "MinLengthLogitsProcessor",
    "RepetitionPenaltyLogitsProcessor",
    "TemperatureLogitsWarper",
    "TopKLogitsWarper",
    "TopPLogitsWarper",
    "build_processors",
]

_FILTERED = float("-inf")


class LogitsProcessor:
    """Base class: edit the next-token ``scores`` given the tokens so far."""

    def __call__(self, input_ids: flow.Tensor, scores: flow.Tensor) -> flow.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")


class LogitsProcessorList(list):
    """Processors applied in order (LiBai's and Hugging Face's name)."""

    def __call__(self, input_ids: flow.Tensor, scores: flow.Tensor) -> flow.Tensor:
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


class RepetitionPenaltyLogitsProcessor(LogitsProcessor):
    """Make every token already in ``input_ids`` less likely (CTRL's penalty).

    A seen token's score is divided by ``penalty`` when positive and multiplied by it when
    negative, so ``penalty > 1`` always lowers it. Prompt tokens count as seen.
    """

    def __init__(self, penalty: float) -> None:
        if not penalty > 0:
            raise ValueError(f"repetition_penalty must be a positive float, got {penalty}")
        self.penalty = float(penalty)

    def __call__(self, input_ids: flow.Tensor, scores: flow.Tensor) -> flow.Tensor:
        seen = flow.gather(scores, 1, input_ids)
        seen = flow.where(seen < 0, seen * self.penalty, seen / self.penalty)
        return flow.scatter(scores, 1, input_ids, seen)


class MinLengthLogitsProcessor(LogitsProcessor):
    """Forbid the end-of-sequence tokens while the sequences are shorter than ``min_length``
    (tokens so far, prompt included for decoder-only models), as Hugging Face's processor of
    the same name does; ``generate(min_new_tokens=n)`` counts from the prompt's end."""

    def __init__(self, min_length: int, eos_token_id) -> None:
        if not isinstance(min_length, int) or isinstance(min_length, bool) or min_length < 0:
            raise ValueError(f"min_length must be a non-negative integer, got {min_length!r}")
        ids = [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id or [])
        self.min_length = min_length
        self.eos_token_id = ids

    def __call__(self, input_ids: flow.Tensor, scores: flow.Tensor) -> flow.Tensor:
        if input_ids.shape[-1] >= self.min_length or not self.eos_token_id:
            return scores
        block = flow.zeros(scores.shape[-1], dtype=flow.bool, device=scores.device)
        block[self.eos_token_id] = True
        return scores.masked_fill(block.unsqueeze(0).expand_as(scores), _FILTERED)


class TemperatureLogitsWarper(LogitsProcessor):
    """Divide the scores by ``temperature`` (< 1 sharpens, > 1 flattens the distribution)."""

    def __init__(self, temperature: float) -> None:
        if not temperature > 0:
            raise ValueError(
                f"temperature must be a strictly positive float, got {temperature}; for "
                "deterministic output use do_sample=False"
            )
        self.temperature = float(temperature)

    def __call__(self, input_ids: flow.Tensor, scores: flow.Tensor) -> flow.Tensor:
        return scores / self.temperature


class TopKLogitsWarper(LogitsProcessor):
    """Keep the ``top_k`` highest scores (ties with the k-th kept too); the rest become -inf."""

    def __init__(self, top_k: int, min_tokens_to_keep: int = 1) -> None:
        if int(top_k) <= 0:
            raise ValueError(f"top_k must be a strictly positive integer, got {top_k}")
        self.top_k = max(int(top_k), min_tokens_to_keep)

    def __call__(self, input_ids: flow.Tensor, scores: flow.Tensor) -> flow.Tensor:
        k = min(self.top_k, scores.shape[-1])
        kth = flow.topk(scores, k, dim=-1)[0][..., -1:]
        return scores.masked_fill(scores < kth, _FILTERED)


class TopPLogitsWarper(LogitsProcessor):
    """Nucleus filtering: keep the smallest set of most likely tokens whose probability sum
    reaches ``top_p`` (at least ``min_tokens_to_keep``); the rest become -inf."""

    def __init__(self, top_p: float, min_tokens_to_keep: int = 1) -> None:
        if not 0.0 <= float(top_p) <= 1.0:
            raise ValueError(f"top_p must be a float in [0, 1], got {top_p}")
        self.top_p = float(top_p)
        self.min_tokens_to_keep = int(min_tokens_to_keep)

    def __call__(self, input_ids: flow.Tensor, scores: flow.Tensor) -> flow.Tensor:
        ascending, order = flow.sort(scores, dim=-1, descending=False)
        cumulative = flow.cumsum(flow.softmax(ascending, dim=-1), dim=-1)
        drop_sorted = cumulative <= (1.0 - self.top_p)
        keep_last = flow.zeros_like(drop_sorted)
        keep_last[..., -self.min_tokens_to_keep:] = 1
        drop_sorted = flow.logical_and(drop_sorted, flow.logical_not(keep_last))
        # back to vocabulary order: the inverse permutation of ``order``
        inverse = flow.argsort(order.to(flow.int64), dim=-1)
        drop = flow.gather(drop_sorted.to(flow.int8), 1, inverse).to(flow.bool)
        return scores.masked_fill(drop, _FILTERED)


def build_processors(
    *,
    do_sample: bool,
    num_beams: int,
    temperature: Optional[float],
    top_k: Optional[int],
    top_p: Optional[float],
    repetition_penalty: Optional[float],
    extra: Optional[List[LogitsProcessor]] = None,
    min_length: Optional[int] = None,
    eos_token_id=None,
) -> LogitsProcessorList:
    """The processors ``generate`` applies, in Hugging Face's order.

    Warpers only act when sampling; a value that changes nothing (temperature 1, top_k 0 or
    None, top_p 1) adds no processor. Beam sampling keeps at least two tokens, as HF does.
    """
    processors = LogitsProcessorList()
    if repetition_penalty is not None and repetition_penalty != 1.0:
        processors.append(RepetitionPenaltyLogitsProcessor(repetition_penalty))
    if min_length:
        processors.append(MinLengthLogitsProcessor(min_length, eos_token_id))
    processors.extend(extra or [])
    if do_sample:
        keep = 2 if num_beams > 1 else 1
        if temperature is not None and temperature != 1.0:
            processors.append(TemperatureLogitsWarper(temperature))
        if top_k is not None and top_k != 0:
            processors.append(TopKLogitsWarper(top_k, min_tokens_to_keep=keep))
        if top_p is not None and top_p < 1.0:
            processors.append(TopPLogitsWarper(top_p, min_tokens_to_keep=keep))
    return processors
