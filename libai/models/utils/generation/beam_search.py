"""Beam search bookkeeping with Hugging Face's semantics (``transformers`` 5.x, vectorised).

Per batch item, ``num_beams`` running hypotheses are extended each step by the best
``2 * num_beams`` (more with several EOS ids) continuations of all of them; continuations that
end (EOS, or the maximum length) and rank among the first ``num_beams`` candidates enter the
item's finished set, scored by ``sum log p / generated_length ** length_penalty``; the best
unfinished ones keep running. An item stops improving once its finished set is full and its
best running score (normalised at the current length, ``early_stopping=False``) cannot beat
its worst finished one; ``early_stopping=True`` stops an item as soon as ``num_beams``
hypotheses finished; ``"never"`` normalises the running score at the maximum length.

Everything here works on local tensors ``[batch, beams, ...]``; the model and its cache are
the caller's (:meth:`BeamSearch.step` returns which flat beam each new beam continues, to
reorder the cache).
"""
from typing import Sequence, Tuple, Union

import oneflow as flow

__all__ = ["BeamSearch"]

_NEG = -1.0e9


def _gather_beams(tensor: flow.Tensor, index: flow.Tensor) -> flow.Tensor:
    """``tensor[b, index[b, j], ...]`` for ``tensor`` ``[batch, beams, ...]``."""
    while index.ndim < tensor.ndim:
        index = index.unsqueeze(-1)
    index = index.expand(*index.shape[:2], *tensor.shape[2:])
    return flow.gather(tensor, 1, index)


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
        self.eos = list(eos_token_ids)
        self.length_penalty, self.early_stopping = float(length_penalty), early_stopping
        self.keep = max(2, 1 + len(self.eos)) * num_beams
        device = prompts.device
        b, k = self.batch, num_beams
        running = flow.full((b, k, max_length), fill_token_id, dtype=flow.int64, device=device)
        running[:, :, :prompt_len] = prompts.view(b, k, prompt_len)
        self.running = running
        self.running_scores = flow.zeros(b, k, dtype=flow.float32, device=device)
        self.running_scores[:, 1:] = _NEG  # identical beams at first: only beam 0 may expand
        self.sequences = running.clone()
        self.scores = flow.full((b, k), _NEG, dtype=flow.float32, device=device)
        self.lengths = flow.zeros(b, k, dtype=flow.int64, device=device)
        self.finished = flow.zeros(b, k, dtype=flow.bool, device=device)
        self.improvable = flow.ones(b, 1, dtype=flow.bool, device=device)
        self.all_hit = False
        self._top = flow.arange(self.keep, device=device) < k

    # ----------------------------------------------------------------------------- state
    def running_tokens(self) -> flow.Tensor:
        """``[batch * beams, cur_len]``: the running hypotheses (the next model input)."""
        return self.running[:, :, : self.cur_len].reshape(self.batch * self.num_beams, self.cur_len)

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
        (reorder the key/value cache with it).
        """
        b, k = self.batch, self.num_beams
        vocab = log_probs.shape[-1]
        total = (log_probs.view(b, k, vocab) + self.running_scores.unsqueeze(-1)).view(b, k * vocab)
        top_scores, top_index = self._choose(total, sample, generator)
        source_beam = top_index // vocab
        tokens = top_index % vocab
        candidates = _gather_beams(self.running, source_beam)
        candidates[:, :, self.cur_len] = tokens
        hits = self._ends(tokens)

        # the best candidates that did not end keep running
        alive_scores = top_scores + hits.to(flow.float32) * _NEG
        pick = flow.topk(alive_scores, k, dim=-1)[1]
        self.running = _gather_beams(candidates, pick)
        self.running_scores = _gather_beams(alive_scores, pick)
        parent = _gather_beams(source_beam, pick)

        self._collect_finished(candidates, top_scores, hits)
        self.cur_len += 1
        self._update_improvable()
        self.all_hit = bool(hits.all())
        offsets = flow.arange(b, device=parent.device).view(b, 1) * k
        return (parent + offsets).view(b * k)

    def _choose(self, total: flow.Tensor, sample: bool, generator) -> Tuple[flow.Tensor, flow.Tensor]:
        if not sample:
            return flow.topk(total, self.keep, dim=-1)
        probs = flow.softmax(total, dim=-1)
        index = flow.multinomial(probs, self.keep, replacement=False, generator=generator)
        scores = flow.gather(total, 1, index)
        scores, order = flow.sort(scores, dim=-1, descending=True)
        return scores, flow.gather(index, 1, order.to(flow.int64))

    def _ends(self, tokens: flow.Tensor) -> flow.Tensor:
        hits = flow.zeros_like(tokens).to(flow.bool)
        for eos in self.eos:
            hits = flow.logical_or(hits, tokens == eos)
        if self.cur_len + 1 >= self.max_length:
            hits = flow.ones_like(hits)
        return hits

    def _collect_finished(self, candidates, top_scores, hits) -> None:
        generated = self.cur_len + 1 - self.prompt_len
        just_finished = flow.logical_and(hits, self._top.unsqueeze(0))
        scores = top_scores / (generated ** self.length_penalty)
        closed = flow.logical_and(
            self.finished.all(dim=-1, keepdim=True),
            flow.tensor(self.early_stopping is True, device=hits.device),
        )
        blocked = flow.logical_or(closed, flow.logical_not(self.improvable))
        blocked = flow.logical_or(blocked, flow.logical_not(just_finished))
        scores = scores + blocked.to(flow.float32) * _NEG
        merged_scores = flow.cat([self.scores, scores], dim=1)
        pick = flow.topk(merged_scores, self.num_beams, dim=-1)[1]
        self.sequences = _gather_beams(flow.cat([self.sequences, candidates], dim=1), pick)
        self.scores = _gather_beams(merged_scores, pick)
        self.finished = _gather_beams(flow.cat([self.finished, just_finished], dim=1), pick)
        new_lengths = flow.full(hits.shape, generated, dtype=flow.int64, device=hits.device)
        self.lengths = _gather_beams(flow.cat([self.lengths, new_lengths], dim=1), pick)

    def _update_improvable(self) -> None:
        if self.early_stopping == "never" and self.length_penalty > 0.0:
            best_length = self.max_length - self.prompt_len
        else:
            best_length = self.cur_len - self.prompt_len
        best_running = self.running_scores[:, :1] / (best_length ** self.length_penalty)
        worst = self.scores.min(dim=1, keepdim=True)
        worst = worst[0] if isinstance(worst, tuple) else worst
        worst_finished = flow.where(self.finished, worst.expand(*self.finished.shape),
                                    flow.full_like(self.scores, _NEG))
        better = (best_running > worst_finished).any(dim=-1, keepdim=True)
        self.improvable = flow.logical_and(self.improvable, better)

    # ----------------------------------------------------------------------------- result
    def result(self, num_return_sequences: int = 1) -> flow.Tensor:
        """The best ``num_return_sequences`` finished hypotheses per item, flattened to
        ``[batch * n, prompt_len + longest]`` (shorter ones end in the fill token)."""
        n = num_return_sequences
        sequences = self.sequences[:, :n].reshape(self.batch * n, self.max_length)
        longest = int(self.lengths[:, :n].max().item())
        return sequences[:, : self.prompt_len + longest]
