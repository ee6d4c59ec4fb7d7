"""Head and loss of the transformer skeleton, and the config plumbing its models share.

:mod:`libai.models.transformer` holds the first two parts of a libai language model
(embeddings, blocks); this module holds the rest, so that BERT, RoBERTa, GPT-2, T5 and Llama
each only say how they differ:

- :func:`lm_head`: the LM head, tied to the word embedding (:class:`~libai.layers.LMLogits`,
  optionally biased) or a separate vocabulary-split projection, and :func:`lm_logits` to apply
  it;
- :class:`LanguageModelBody`: what a body class (``BertModel``, ``GPTModel``, ``T5Model`` ...)
  does with a config dict: keyword arguments of its constructor, synonyms resolved;
- :class:`LanguageModelTask`: a task wrapper (``...ForPreTraining``, ``...ForCausalLM``,
  ``BertForClassification``) built from one config dict of body settings plus its own head
  options, whose :meth:`~LanguageModelTask.lm_outputs` is the one place that decides between
  the loss dict (training with labels) and the scores (evaluation, generation);
- :class:`CausalLMTask`: the task wrapper of a decoder-only LM (GPT-2, Llama), whose
  ``forward`` and generation step are the same for every such model;
- :func:`split_cache` / :func:`join_cache`: the ``use_cache`` return convention
  (``output`` or ``(output, presents)``).
"""
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers import Linear, LMLogits
from libai.models.common.config import merge_config, resolve_arguments
from libai.models.pretrained.api import PretrainedMixin
from libai.models.transformer import TransformerModelMixin
from libai.models.utils.generation import GenerationMixin

__all__ = [
    "Cache",
    "CausalLMTask",
    "LanguageModelBody",
    "LanguageModelTask",
    "constructor_arguments",
    "join_cache",
    "lm_head",
    "lm_logits",
    "split_cache",
]

#: A model's key/value cache: one tuple per block, as its attention layers return them
#: (``(key, value)``; a decoder block adds its cross-attention ``(key, value)``).
Cache = Tuple[Tuple[flow.Tensor, ...], ...]


def lm_head(
    vocab_size: int, hidden_size: int, *, tied: bool, bias: bool = False,
    init_method: Optional[Callable] = None,
) -> nn.Module:
    """The LM head at ``layer_idx=-1``.

    ``tied``: :class:`~libai.layers.LMLogits` over the word embedding it is given at call time
    (with a vocabulary bias when ``bias``); else a bias-free column-parallel
    :class:`~libai.layers.Linear` of its own (vocabulary-split logits like the tied head's),
    initialised by ``init_method`` (None: Linear's default).
    """
    if tied:
        return LMLogits(vocab_size, bias=bias, layer_idx=-1)
    init = {} if init_method is None else {"init_method": init_method}
    return Linear(hidden_size, vocab_size, bias=False, parallel="col", layer_idx=-1, **init)


def lm_logits(
    head: nn.Module, hidden_states: flow.Tensor, word_embeddings: Optional[flow.Tensor]
) -> flow.Tensor:
    """Apply an :func:`lm_head`: ``word_embeddings`` for a tied head, None for an untied one."""
    if word_embeddings is None:
        return head(hidden_states)
    return head(hidden_states, word_embeddings)


def split_cache(out: Any, use_cache: bool) -> Tuple[Any, Optional[Cache]]:
    """``(output, presents)`` of a call that returned ``(output, presents)`` only with
    ``use_cache``."""
    return out if use_cache else (out, None)


def join_cache(output: Any, presents: Optional[Cache], use_cache: bool) -> Any:
    """The ``use_cache`` return convention: ``(output, presents)``, or ``output`` alone."""
    return (output, presents) if use_cache else output


def constructor_arguments(frame_locals: Mapping[str, Any], *drop: str) -> Dict[str, Any]:
    """A constructor's arguments from its ``locals()``, without ``self`` and ``drop``.

    For a subclass constructor that restates its parent's signature with other defaults (the
    signature is public and read by config resolution) and passes every argument on.
    """
    skip = {"self", "__class__", *drop}
    return {name: value for name, value in frame_locals.items() if name not in skip}


class LanguageModelBody(nn.Module, TransformerModelMixin, PretrainedMixin):
    """Base of the body classes: built from keyword arguments or from one config dict.

    ``from_config`` maps a config dict onto the constructor's parameters (synonyms such as
    ``layernorm_eps`` accepted, typos rejected; see :func:`resolve_arguments`).
    ``family_keys`` are config keys of the model family that the body does not read (the heads'
    options in a config shared with them); they are dropped without a warning.
    """

    family_keys: Tuple[str, ...] = ()

    @classmethod
    def from_config(cls, cfg: Mapping) -> Dict[str, Any]:
        return resolve_arguments(cfg, cls.__init__, cls.__name__, ignored=cls.family_keys)[0]


class LanguageModelTask(nn.Module, TransformerModelMixin, PretrainedMixin):
    """Base of the task wrappers: a body plus a head and its loss, from one config dict.

    A subclass's ``__init__(cfg=None, **model_args)`` (decorated ``@configurable``) calls
    :meth:`body_arguments` for the body's keyword arguments and its own head options, builds
    the body, head and ``loss_func``, and its ``forward`` ends in :meth:`lm_outputs`.
    """

    @classmethod
    def from_config(cls, cfg: Mapping) -> Dict[str, Any]:
        return {"cfg": cfg}

    def body_arguments(
        self, cfg: Optional[Mapping], model_args: Mapping[str, Any], body: type,
        extra: Optional[Mapping[str, Any]] = None,
    ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """``(keyword arguments of body, this task's ``extra`` options)`` of ``cfg`` updated
        with ``model_args``."""
        return resolve_arguments(
            merge_config(cfg, model_args), body.__init__, type(self).__name__, extra=extra
        )

    def lm_outputs(
        self,
        scores: flow.Tensor,
        labels: Optional[flow.Tensor],
        loss_mask: Optional[flow.Tensor] = None,
        *,
        loss_key: str = "lm_loss",
        presents: Optional[Cache] = None,
    ) -> Dict[str, Any]:
        """In training with ``labels``: the loss dict (``loss_func``'s own dict, or
        ``{loss_key: loss}``); otherwise ``{"prediction_scores"}`` plus ``"past_key_values"``
        when ``presents`` are given."""
        if self.training and labels is not None:
            args = (scores, labels) if loss_mask is None else (scores, labels, loss_mask)
            loss: Union[flow.Tensor, Dict[str, flow.Tensor]] = self.loss_func(*args)
            return loss if isinstance(loss, dict) else {loss_key: loss}
        outputs: Dict[str, Any] = {"prediction_scores": scores}
        if presents is not None:
            outputs["past_key_values"] = presents
        return outputs


class CausalLMTask(LanguageModelTask, GenerationMixin):
    """Base of the decoder-only task wrappers (``GPTForPreTraining``, ``LlamaForCausalLM``).

    Their ``forward`` and ``generate`` step are the same: logits of the new tokens (with the
    key/value cache under ``use_cache``), then :meth:`~LanguageModelTask.lm_outputs`. A subclass
    builds its body, head and ``loss_func`` and says only how logits come out of them
    (:meth:`_causal_logits`).
    """

    def _causal_logits(self, input_ids, attention_mask, past_key_values, use_cache, position_ids):
        """Logits ``[batch, seq, vocab]``; ``(logits, presents)`` with ``use_cache``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement _causal_logits")

    def forward(
        self,
        input_ids: flow.Tensor,
        labels: Optional[flow.Tensor] = None,
        attention_mask: Optional[flow.Tensor] = None,
        past_key_values: Optional[Cache] = None,
        use_cache: bool = False,
        position_ids: Optional[flow.Tensor] = None,
    ) -> Dict[str, Any]:
        """``{"lm_loss": scalar}`` in training when ``labels`` are given (position ``t``
        predicts ``labels[:, t]``: the data pipeline shifts them), else
        ``{"prediction_scores": logits}``, plus ``"past_key_values"`` with ``use_cache``.

        ``attention_mask`` ``[batch, past + seq]`` (1 = real token, 0 = padding),
        ``past_key_values`` (the cache of an earlier ``use_cache=True`` call; ``input_ids`` are
        then only the new tokens) and ``position_ids`` are as in the body's ``forward``.
        """
        out = self._causal_logits(
            input_ids, attention_mask, past_key_values, use_cache, position_ids
        )
        logits, presents = split_cache(out, use_cache)
        return self.lm_outputs(logits, labels, presents=presents)

    def _generation_step(self, input_ids, attention_mask, position_ids, past_key_values, encoder):
        return self._causal_logits(input_ids, attention_mask, past_key_values, True, position_ids)
