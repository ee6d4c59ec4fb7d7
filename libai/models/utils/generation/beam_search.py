"""Beam search bookkeeping with Hugging Face's semantics (``transformers`` 5.x, vectorised).

Per batch item, ``num_beams`` running hypotheses are extended each step by the best
``2 * num_beams`` (more with several EOS ids) continuations of all of them; continuations that
end (EOS, or the maximum length) and rank among the first ``num_beams`` candidates enter the
item's finished set, scored by ``sum log p / generated_length ** length_penalty``; the best
unfinished ones keep running. An item stops improving once its finished set is full and its
best running score (normalised at the current length, ``early_stopping=False``) cannot beat
its worst finished one; ``early_stopping=True`` stops an item as soon as ``num_beams``
hypotheses finished; ``"never"`` normalises the running score at the maximum length.

The model and its cache are the caller's (:meth:`BeamSearch.step` returns which flat beam each
new beam continues, to reorder the cache). Only the choice among the ``beams x vocab``
continuations runs on the model's device; the bookkeeping after it (a few ``[batch, 2 * beams]``
arrays per token) runs in NumPy on the host, because as tensor ops it was some forty small
device calls per token, 30-40% of the search step's CPU time on the CPU
(benchmarks/results/2026-11-29-bounds-and-isa.md). Every step waits for its scores anyway
(``is_done`` reads them), so the host copy adds no wait, on a GPU either. The arithmetic is the
same in float32 and ``topk``'s order among equal scores (lower index first) is kept, so the
tokens are those device-side bookkeeping would choose.
"""
from typing import Sequence, Tuple, Union

import numpy as np
import oneflow as flow

__all__ = ["BeamSearch"]

_NEG = np.float32(-1.0e9)


def _gather_beams(array: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``array[b, index[b, j], ...]`` for ``array`` ``[batch, beams, ...]``."""
    return array[np.arange(array.shape[0])[:, None], index]


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest per row, largest first, lower index first among equals
    (OneFlow's ``topk`` order)."""
    return np.argsort(-scores, axis=-1, kind="stable")[:, :k]


class BeamSearch:
    """The state of a beam search over ``batch`` items.

    Args:
        prompts: ``[batch * num_beams, prompt_len]`` (each item's prompt repeated per beam).
        num_beams, max_length: beams per item; total length (prompt included) at which a
            hypothesis ends.
        eos_token_ids: ids that end a hypothesis (may be empty).
        fill_token_id: written after the end of a shorter finished hypothesis.
        length_penalty, early_stopping: Hugging Face's meanings (defaults 1.0, False).
    """

    def __init__(
        self,
        prompts: flow.Tensor,
        num_beams: int,
        max_length: int,
        eos_token_ids: Sequence[int],
        fill_token_id: int,
        length_penalty: float = 1.0,
        early_stopping: Union[bool, str] = False,
    ) -> None:
        if early_stopping not in (True, False, "never"):
            raise ValueError(f"early_stopping must be True, False or 'never', got {early_stopping!r}")
        rows, prompt_len = prompts.shape
        self.batch, self.num_beams = rows // num_beams, num_beams
        self.prompt_len, self.cur_len, self.max_length = prompt_len, prompt_len, max_length
        self.eos = np.asarray(list(eos_token_ids), dtype=np.int64)
        self.length_penalty, self.early_stopping = float(length_penalty), early_stopping
        self.keep = max(2, 1 + len(self.eos)) * num_beams
        self.device = prompts.device
        b, k = self.batch, num_beams
        self.running = np.full((b, k, max_length), fill_token_id, dtype=np.int64)
        self.running[:, :, :prompt_len] = prompts.numpy().reshape(b, k, prompt_len)
        self.running_scores = np.zeros((b, k), dtype=np.float32)
        self.running_scores[:, 1:] = _NEG  # identical beams at first: only beam 0 may expand
        self.sequences = self.running.copy()
        self.scores = np.full((b, k), _NEG, dtype=np.float32)
        self.lengths = np.zeros((b, k), dtype=np.int64)
        self.finished = np.zeros((b, k), dtype=bool)
        self.improvable = np.ones((b, 1), dtype=bool)
        self.all_hit = False
        self._top = np.arange(self.keep) < k

    # ----------------------------------------------------------------------------- state
    def running_tokens(self) -> flow.Tensor:
        """``[batch * beams, cur_len]``: the running hypotheses (the next model input)."""
        tokens = self.running[:, :, : self.cur_len].reshape(self.batch * self.num_beams, self.cur_len)
        return flow.tensor(tokens, dtype=flow.int64, device=self.device)

    def is_done(self) -> bool:
        """Whether no item can still improve (or every continuation just ended)."""
        if self.all_hit:
            return True
        open_beam = not (bool(self.finished.all()) and self.early_stopping is True)
        return not (bool(self.improvable.any()) and open_beam)

    # ----------------------------------------------------------------------------- step
    def step(self, log_probs: flow.Tensor, sample: bool = False, generator=None) -> flow.Tensor:
        """Advance one token from processed ``log_probs`` ``[batch * beams, vocab]``.

        Returns the flat index ``[batch * beams]`` of the beam each new running beam extends
        (reorder the key/value cache with it), on ``log_probs``' device.
        """
        b, k = self.batch, self.num_beams
        vocab = log_probs.shape[-1]
        beam_scores = flow.tensor(self.running_scores, device=log_probs.device)
        total = (log_probs.view(b, k, vocab) + beam_scores.unsqueeze(-1)).view(b, k * vocab)
        top_scores, top_index = self._choose(total, sample, generator)
        source_beam, tokens = top_index // vocab, top_index % vocab
        candidates = _gather_beams(self.running, source_beam)
        candidates[:, :, self.cur_len] = tokens
        hits = self._ends(tokens)

        # the best candidates that did not end keep running
        alive_scores = top_scores + hits.astype(np.float32) * _NEG
        pick = _top(alive_scores, k)
        self.running = _gather_beams(candidates, pick)
        self.running_scores = _gather_beams(alive_scores, pick)
        parent = _gather_beams(source_beam, pick)

        self._collect_finished(candidates, top_scores, hits)
        self.cur_len += 1
        self._update_improvable()
        self.all_hit = bool(hits.all())
        flat = (parent + np.arange(b)[:, None] * k).reshape(b * k)
        return flow.tensor(flat, dtype=flow.int64, device=log_probs.device)

    def _choose(self, total: flow.Tensor, sample: bool, generator) -> Tuple[np.ndarray, np.ndarray]:
        """The ``keep`` best (or sampled) continuations per item, as host arrays."""
        if not sample:
            scores, index = flow.topk(total, self.keep, dim=-1)
        else:
            probs = flow.softmax(total, dim=-1)
            index = flow.multinomial(probs, self.keep, replacement=False, generator=generator)
            scores = flow.gather(total, 1, index)
            scores, order = flow.sort(scores, dim=-1, descending=True)
            index = flow.gather(index, 1, order.to(flow.int64))
        return scores.numpy().astype(np.float32, copy=False), index.numpy().astype(np.int64, copy=False)

    def _ends(self, tokens: np.ndarray) -> np.ndarray:
        if self.cur_len + 1 >= self.max_length:
            return np.ones(tokens.shape, dtype=bool)
        return np.isin(tokens, self.eos)

    def _collect_finished(self, candidates: np.ndarray, top_scores: np.ndarray, hits: np.ndarray) -> None:
        generated = self.cur_len + 1 - self.prompt_len
        just_finished = np.logical_and(hits, self._top[None, :])
        scores = top_scores / np.float32(generated ** self.length_penalty)
        closed = np.logical_and(self.finished.all(axis=-1, keepdims=True), self.early_stopping is True)
        blocked = closed | ~self.improvable | ~just_finished
        scores = scores + blocked.astype(np.float32) * _NEG
        merged_scores = np.concatenate([self.scores, scores], axis=1)
        pick = _top(merged_scores, self.num_beams)
        self.sequences = _gather_beams(np.concatenate([self.sequences, candidates], axis=1), pick)
        self.scores = _gather_beams(merged_scores, pick)
        self.finished = _gather_beams(np.concatenate([self.finished, just_finished], axis=1), pick)
        new_lengths = np.full(hits.shape, generated, dtype=np.int64)
        self.lengths = _gather_beams(np.concatenate([self.lengths, new_lengths], axis=1), pick)

    def _update_improvable(self) -> None:
        if self.early_stopping == "never" and self.length_penalty > 0.0:
            best_length = self.max_length - self.prompt_len
        else:
            best_length = self.cur_len - self.prompt_len
        best_running = self.running_scores[:, :1] / np.float32(best_length ** self.length_penalty)
        worst = self.scores.min(axis=1, keepdims=True)
        worst_finished = np.where(self.finished, worst, _NEG)
        better = (best_running > worst_finished).any(axis=-1, keepdims=True)
        self.improvable = np.logical_and(self.improvable, better)

    # ----------------------------------------------------------------------------- result
    def result(self, num_return_sequences: int = 1) -> flow.Tensor:
        """The best ``num_return_sequences`` finished hypotheses per item, flattened to
        ``[batch * n, prompt_len + longest]`` (shorter ones end in the fill token)."""
        n = num_return_sequences
        sequences = self.sequences[:, :n].reshape(self.batch * n, self.max_length)
        longest = int(self.lengths[:, :n].max())
        return flow.tensor(sequences[:, : self.prompt_len + longest], dtype=flow.int64, device=self.device)
