"""``model.generate(...)``: greedy search, sampling and beam search over a key/value cache.

The mixin lives under ``libai/models`` because ``generate`` is a model method and models may
import only config, layers and utils (``libai.inference`` sits above them and reuses it).
A model opts in by inheriting :class:`GenerationMixin` and implementing two small hooks:

- ``_generation_step(input_ids, attention_mask, position_ids, past_key_values, encoder)``
  runs the decoder on the *new* tokens and returns ``(logits [b, s, vocab], presents)``;
  ``presents`` is the key/value cache the attention layers return (``use_cache=True``), fed
  back as ``past_key_values`` on the next call;
- ``_generation_encode(input_ids, attention_mask)`` (encoder-decoder models only, with
  ``is_encoder_decoder = True``) runs the encoder once and returns what the step needs.

Semantics follow Hugging Face ``transformers``' ``generate``: decoder-only models return
prompt + new tokens, encoder-decoder ones ``decoder_start_token_id`` + new tokens; sequences
that produced ``eos_token_id`` are padded with ``pad_token_id``; position ids of left-padded
prompts count from each row's first real token (``cumsum(attention_mask) - 1``); a missing
``attention_mask`` is inferred from ``pad_token_id`` when the prompt contains it and it differs
from the EOS id. One documented difference: finished beam hypotheses are padded with
``pad_token_id`` even when it is 0 (``transformers`` then writes the EOS id).

Under data/tensor/pipeline parallelism every rank runs the same loop on the full (local)
last-position logits, so every rank picks the same tokens; the tokens go back to the model as
broadcast global tensors on the first stage. Sampling draws from ``generator`` (or OneFlow's
default generator), identically on every rank.
"""
import contextlib
import logging
from typing import Any, ContextManager, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import oneflow as flow

from libai.layers.utils import local_tensors
from libai.models.utils.generation.beam_search import BeamSearch
from libai.models.utils.generation.processors import LogitsProcessor, build_processors
from libai.utils.distributed import ParallelLayout, get_world_size, ttol

__all__ = ["GenerationMixin", "model_layout"]

logger = logging.getLogger(__name__)

Cache = Optional[Tuple[Tuple[flow.Tensor, ...], ...]]


class GenerationMixin:
    """Adds :meth:`generate` to a libai model (see the module docstring for the hooks)."""

    is_encoder_decoder: bool = False

    # ---------------------------------------------------------------------- model hooks
    def _generation_step(
        self,
        input_ids: flow.Tensor,
        attention_mask: Optional[flow.Tensor],
        position_ids: Optional[flow.Tensor],
        past_key_values: Cache,
        encoder: Any,
    ) -> Tuple[flow.Tensor, Cache]:
        raise NotImplementedError(f"{type(self).__name__} does not implement _generation_step")

    def _generation_encode(self, input_ids: flow.Tensor, attention_mask: Optional[flow.Tensor]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} is not an encoder-decoder model")

    # ---------------------------------------------------------------------- entry point
    @flow.no_grad()
    def generate(
        self,
        input_ids: Any,
        max_new_tokens: Optional[int] = None,
        do_sample: bool = False,
        temperature: Optional[float] = 1.0,
        top_k: Optional[int] = 50,
        top_p: Optional[float] = 1.0,
        num_beams: int = 1,
        repetition_penalty: Optional[float] = 1.0,
        eos_token_id: Union[int, Sequence[int], None] = None,
        pad_token_id: Optional[int] = None,
        attention_mask: Any = None,
        *,
        max_length: Optional[int] = None,
        length_penalty: float = 1.0,
        early_stopping: Union[bool, str] = False,
        num_return_sequences: int = 1,
        decoder_start_token_id: Optional[int] = None,
        use_cache: bool = True,
        generator: Optional[flow.Generator] = None,
        logits_processor: Optional[List[LogitsProcessor]] = None,
        min_length: Optional[int] = None,
        min_new_tokens: Optional[int] = None,
        streamer: Optional[Any] = None,
        **unsupported: Any,
    ) -> flow.Tensor:
        """Continue ``input_ids`` ``[batch, len]`` (prompts; for encoder-decoder models the
        encoder input) and return the tokens as a local int64 tensor, the same on every rank.

        Args:
            max_new_tokens: tokens to add (or give ``max_length``, the total length; HF's
                default of 20 total when neither is given).
            do_sample: sample from the processed distribution instead of taking the argmax.
            temperature, top_k, top_p: sampling warpers (ignored unless ``do_sample``;
                ``top_k`` defaults to 50 as in HF; 0 or None disables it).
            num_beams: > 1 for beam search (``length_penalty``, ``early_stopping``,
                ``num_return_sequences`` as in HF).
            repetition_penalty: > 1 discourages tokens already present.
            eos_token_id, pad_token_id, decoder_start_token_id: default to the values in the
                loaded Hugging Face config (``model.pretrained_config``), if any.
            attention_mask: ``[batch, len]``, 1 for real tokens, 0 for (left) padding.
            use_cache: reuse the attention layers' key/value cache (one new token per step);
                False recomputes the whole sequence every step (same tokens, slower).
            generator: a ``flow.Generator`` for reproducible sampling.
            logits_processor: extra processors, applied after the repetition penalty.
            min_length, min_new_tokens: no end-of-sequence token before the sequence has
                ``min_length`` tokens (prompt included) or ``min_new_tokens`` new ones
                (Hugging Face's meaning; both given: the longer wins).
            streamer: an object with ``put(tokens)`` and ``end()`` (Hugging Face's streamer
                protocol): ``put`` receives the prompts, then each step's new tokens (local
                int64 ``[batch]``), ``end`` is called once done. Greedy search and sampling
                only (see :mod:`libai.inference.streaming` for one that prints text).

        Other keywords of ``transformers``' ``generate`` that libai does not implement
        (``no_repeat_ngram_size``, ``output_scores``, ``stopping_criteria``, ...) are refused by name
        with a ``TypeError``, rather than silently ignored.
        """
        _refuse_unsupported(unsupported)
        if getattr(self, "training", False):
            logger.warning("generate() called in training mode: dropout is active; call "
                           "model.eval() first for deterministic results")
        eos, pad, start = self._generation_settings(eos_token_id, pad_token_id, decoder_start_token_id)
        prompts, mask = self._prompts_and_mask(input_ids, attention_mask, pad, eos,
                                               max(num_beams, num_return_sequences))
        _check_search(num_beams, num_return_sequences, do_sample)  # after the prompts' checks
        start_len = 1 if self.is_encoder_decoder else prompts.shape[1]
        max_length = _total_length(max_new_tokens, max_length, start_len)
        least = _min_total_length(min_length, min_new_tokens, start_len)
        processors = build_processors(
            do_sample=do_sample, num_beams=num_beams, temperature=temperature, top_k=top_k,
            top_p=top_p, repetition_penalty=repetition_penalty, extra=logits_processor,
            min_length=least, eos_token_id=eos,
        )
        if streamer is not None and num_beams > 1:
            raise ValueError("streamer= works with greedy search and sampling, not beam search "
                             "(the best beam is known only at the end); use num_beams=1")
        with _decoding_tensors(self):
            run = _Runner(self, prompts, mask, start, use_cache)
            if num_beams > 1:
                search = BeamSearch(
                    run.tokens, num_beams, max_length, eos, pad if pad is not None else -1,
                    length_penalty=length_penalty, early_stopping=early_stopping,
                )
                return self._beam_loop(run, search, processors, do_sample, generator,
                                       num_return_sequences)
            if streamer is not None:
                streamer.put(run.tokens)
            tokens = self._token_loop(run, processors, do_sample, generator, max_length, eos, pad,
                                      streamer)
            if streamer is not None:
                streamer.end()
            return tokens

    # ---------------------------------------------------------------------- loops
    def _token_loop(self, run, processors, do_sample, generator, max_length, eos, pad,
                    streamer=None):
        """Greedy search or multinomial sampling, one token per step."""
        tokens = run.tokens
        unfinished = flow.ones(tokens.shape[0], dtype=flow.int64, device=tokens.device)
        while tokens.shape[1] < max_length:
            scores = processors(tokens, run.next_logits(tokens))
            if do_sample:
                probs = flow.softmax(scores, dim=-1)
                chosen = flow.multinomial(probs, 1, generator=generator).squeeze(1)
            else:
                chosen = flow.argmax(scores, dim=-1)
            if eos:
                chosen = chosen * unfinished + pad * (1 - unfinished)
            tokens = flow.cat([tokens, chosen.unsqueeze(1)], dim=1)
            if streamer is not None:
                streamer.put(chosen)
            run.advance(None)
            if eos:
                unfinished = unfinished * flow.logical_not(_is_any(chosen, eos)).to(flow.int64)
                if int(unfinished.max().item()) == 0:
                    break
        return tokens

    def _beam_loop(self, run, search, processors, do_sample, generator, num_return):
        while not search.is_done() and search.cur_len < search.max_length:
            tokens = search.running_tokens()
            log_probs = flow.log_softmax(run.next_logits(tokens), dim=-1)
            log_probs = processors(tokens, log_probs)
            parents = search.step(log_probs, sample=do_sample, generator=generator)
            run.advance(parents)
        return search.result(num_return)

    # ---------------------------------------------------------------------- settings
    def _generation_settings(self, eos, pad, start) -> Tuple[List[int], Optional[int], Optional[int]]:
        """EOS ids, pad id and decoder start id: arguments first, then the HF config."""
        config = getattr(self, "pretrained_config", None) or {}
        if eos is None:
            eos = config.get("eos_token_id")
        if pad is None:
            pad = config.get("pad_token_id")
        if start is None:
            start = config.get("decoder_start_token_id", pad)
        eos_list = [] if eos is None else ([int(eos)] if isinstance(eos, int) else [int(e) for e in eos])
        if pad is None and eos_list:
            logger.warning("pad_token_id not set: finished sequences are padded with eos_token_id=%d",
                           eos_list[0])
            pad = eos_list[0]
        if self.is_encoder_decoder and start is None:
            raise ValueError("an encoder-decoder model needs decoder_start_token_id (or "
                             "pad_token_id) to start the decoder; pass it to generate()")
        return eos_list, pad, start

    def _prompts_and_mask(self, input_ids: Any, attention_mask: Any, pad: Optional[int],
                          eos: List[int], expand: int) -> Tuple[flow.Tensor, flow.Tensor]:
        """The prompts as local int64 ``[batch, len]`` and their mask, each row repeated
        ``expand`` times (beams / returned sequences)."""
        prompts = _local_int64(input_ids)
        if prompts.ndim != 2:
            raise ValueError(f"input_ids must be [batch, length], got shape {tuple(prompts.shape)}")
        mask = self._prompt_mask(prompts, attention_mask, pad, eos)
        if expand > 1:
            prompts, mask = _repeat_rows(prompts, expand), _repeat_rows(mask, expand)
        return prompts, mask

    @staticmethod
    def _prompt_mask(prompts, attention_mask, pad, eos) -> flow.Tensor:
        if attention_mask is not None:
            mask = _local_int64(attention_mask)
            if tuple(mask.shape) != tuple(prompts.shape):
                raise ValueError(f"attention_mask has shape {tuple(mask.shape)}, input_ids "
                                 f"{tuple(prompts.shape)}; they must match")
            return mask
        if pad is not None and pad not in eos and bool((prompts == pad).any()):
            return (prompts != pad).to(flow.int64)
        return flow.ones_like(prompts)


class _Runner:
    """Feeds the model: owns the cache, the attention mask, the position ids and the layout."""

    def __init__(self, model: GenerationMixin, prompts: flow.Tensor, mask: flow.Tensor,
                 start: Optional[int], use_cache: bool) -> None:
        self.model = model
        self.layout = model_layout(model)
        self.use_cache = use_cache
        self.past: Cache = None
        self.encoder = None
        self.padded = bool((mask == 0).any())
        if model.is_encoder_decoder:
            self.encoder = model._generation_encode(
                self.place(prompts), self.place(mask) if self.padded else None
            )
            self.tokens = flow.full((prompts.shape[0], 1), start, dtype=flow.int64,
                                    device=prompts.device)
            self.mask, self.positions = None, None
        else:
            self.tokens = prompts
            self.mask = mask if self.padded else None  # no padding: the model needs no mask
            positions = flow.cumsum(mask, dim=-1) - 1
            self.positions = positions.masked_fill(mask == 0, 0) if self.padded else None

    def place(self, tensor: flow.Tensor) -> flow.Tensor:
        """A local tensor as a model input: broadcast on the first stage in a global run."""
        b = flow.sbp.broadcast
        return self.layout.to_global(tensor, [b, b], stage=0)

    def next_logits(self, tokens: flow.Tensor) -> flow.Tensor:
        """Full float32 logits ``[rows, vocab]`` of the next token after ``tokens``."""
        cached = self.use_cache and self.past is not None
        new = tokens[:, -1:] if cached else tokens
        positions = None
        if self.positions is not None:
            positions = self.positions[:, -new.shape[1]:]
        mask = self.mask
        logits, presents = self.model._generation_step(
            self.place(new),
            None if mask is None else self.place(mask),
            None if positions is None else self.place(positions),
            self.past if cached else None,
            self.encoder,
        )
        if self.use_cache:
            self.past = presents
        last = logits[:, -1, :]
        return ttol(last).to(flow.float32).to(tokens.device)

    def advance(self, parents: Optional[flow.Tensor]) -> None:
        """After a token was appended to every row (``parents``: beam reordering)."""
        if parents is not None:
            if self.past is not None:
                self.past = _reorder(self.past, parents)
            if self.mask is not None:
                self.mask = flow.index_select(self.mask, 0, parents)
                if self.positions is not None:
                    self.positions = flow.index_select(self.positions, 0, parents)
        if self.mask is not None:
            ones = flow.ones(self.mask.shape[0], 1, dtype=self.mask.dtype, device=self.mask.device)
            self.mask = flow.cat([self.mask, ones], dim=1)
        if self.positions is not None:
            self.positions = flow.cat([self.positions, self.positions[:, -1:] + 1], dim=1)


# Keywords of transformers' ``generate`` / ``GenerationConfig`` that libai does not implement.
_TRANSFORMERS_ONLY = (
    "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids", "force_words_ids",
    "constraints", "typical_p", "epsilon_cutoff", "eta_cutoff", "diversity_penalty",
    "num_beam_groups", "penalty_alpha", "encoder_repetition_penalty", "renormalize_logits",
    "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens",
    "forced_decoder_ids", "sequence_bias", "guidance_scale", "low_memory", "output_scores",
    "output_logits", "output_attentions", "output_hidden_states", "return_dict_in_generate",
    "stopping_criteria", "prefix_allowed_tokens_fn", "synced_gpus", "assistant_model",
    "negative_prompt_ids", "max_time", "stop_strings", "generation_config", "bos_token_id",
)


def _refuse_unsupported(unsupported: Dict[str, Any]) -> None:
    if not unsupported:
        return
    names = sorted(unsupported)
    known = [n for n in names if n in _TRANSFORMERS_ONLY]
    unknown = [n for n in names if n not in _TRANSFORMERS_ONLY]
    parts = []
    if known:
        parts.append(f"{', '.join(known)}: transformers' generate() option(s) libai does not "
                     "implement; leave them out (or implement them as a LogitsProcessor and pass "
                     "it in logits_processor=[...])")
    if unknown:
        parts.append(f"{', '.join(unknown)}: not a generate() keyword (misspelt?)")
    raise TypeError("generate() got unsupported keyword argument(s): " + "; ".join(parts))


def _check_search(num_beams: int, num_return_sequences: int, do_sample: bool) -> None:
    """Refuse a beam / return-count combination that no search can honour."""
    if num_beams < 1 or num_return_sequences > num_beams:
        raise ValueError(
            f"num_beams={num_beams} and num_return_sequences={num_return_sequences}: need "
            "num_beams >= 1 and num_return_sequences <= num_beams"
        )
    if num_beams == 1 and num_return_sequences > 1 and not do_sample:
        raise ValueError("greedy search returns one sequence per prompt; use num_beams > 1 "
                         "or do_sample=True for num_return_sequences > 1")


def _total_length(max_new_tokens: Optional[int], max_length: Optional[int], start_len: int) -> int:
    """The total length to generate to: ``max_new_tokens`` past the start if given, else
    ``max_length``, else Hugging Face's default of 20; it must leave something to generate."""
    if max_new_tokens is not None:
        max_length = start_len + int(max_new_tokens)
    elif max_length is None:
        max_length = 20  # Hugging Face's default total length
    if max_length <= start_len:
        raise ValueError(
            f"nothing to generate: max_length={max_length} <= input length {start_len}; "
            "raise max_new_tokens"
        )
    return max_length


def _min_total_length(min_length: Optional[int], min_new_tokens: Optional[int],
                      start_len: int) -> Optional[int]:
    """The total length before which end-of-sequence is forbidden, or None."""
    values = []
    for name, value in (("min_length", min_length), ("min_new_tokens", min_new_tokens)):
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        values.append(value if name == "min_length" else start_len + value)
    return max(values) if values else None


def _reorder(past: Any, index: flow.Tensor) -> Any:
    """Select batch rows ``index`` of every tensor of a (nested) cache."""
    if isinstance(past, (tuple, list)):
        return type(past)(_reorder(p, index) for p in past)
    if past.is_global:
        b = flow.sbp.broadcast
        placed = index.to_global(placement=past.placement, sbp=[b] * len(past.sbp))
        return flow.index_select(past, 0, placed)
    return flow.index_select(past, 0, index.to(past.device))


def _decoding_tensors(model: Any) -> ContextManager[Any]:
    """Where the decoding loop runs: a model laid out on one process decodes on plain local
    tensors (:func:`~libai.layers.utils.local_tensors`; the same kernels on the same values, so
    the same tokens, at about half the Python work per token, since no step converts or checks
    SBP/placements). Under several processes the model stays global, even a model laid out on
    one of them (the other ranks hold nothing of it and must join its collective steps)."""
    layout = model_layout(model)
    if layout.is_global and layout.world_size == 1 and get_world_size() == 1:
        return local_tensors(model)
    return contextlib.nullcontext(model)


def model_layout(model: Any) -> ParallelLayout:
    """The layout ``model`` was built under (its libai layers keep it)."""
    for module in model.modules():
        layout = getattr(module, "layout", None)
        if isinstance(layout, ParallelLayout):
            return layout
    raise ValueError(f"{type(model).__name__} has no libai layer with a parallel layout")


def _local_int64(value: Any) -> flow.Tensor:
    """Ids or masks given as a tensor (local or global), array or nested list -> local int64."""
    if isinstance(value, flow.Tensor):
        return ttol(value).to(flow.int64).to("cpu")
    return flow.tensor(np.asarray(value, dtype=np.int64))


def _repeat_rows(tensor: flow.Tensor, times: int) -> flow.Tensor:
    """Each row ``times`` times in a row (``[r0, r0, r1, r1, ...]``)."""
    rows = tensor.shape[0]
    index = flow.arange(rows, device=tensor.device).view(rows, 1).repeat(1, times).view(-1)
    return flow.index_select(tensor, 0, index)


def _is_any(tokens: flow.Tensor, ids: Sequence[int]) -> flow.Tensor:
    hit = tokens == ids[0]
    for other in ids[1:]:
        hit = flow.logical_or(hit, tokens == other)
    return hit
