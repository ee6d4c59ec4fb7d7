"""How one model family's Hugging Face weights become libai's, and back.

A family (GPT-2, BERT, ...) is one :class:`FamilyMapping` subclass, registered (in the table of
:mod:`~libai.models.pretrained.registry`) by ``model_type`` (the field of ``config.json``) and by
the libai classes it can build. It says:

- :meth:`~FamilyMapping.model_args`: libai constructor arguments from ``config.json``;
- :meth:`~FamilyMapping.rules`: one :class:`Rule` per libai tensor, naming the Hugging Face
  tensor(s) it comes from and the two transforms (load and export) between them;
- :meth:`~FamilyMapping.hf_config`: ``config.json`` back from a built model;
- which checkpoint keys are harmless to find unused (buffers, tied copies, other heads).

Rules are written once and used in both directions, so import and export cannot disagree.
Names are full state-dict names on both sides: libai names include the target class's
prefix (``GPT_model.``), Hugging Face names the head model's (``transformer.``); a checkpoint
of a bare base model (no prefix) is normalised by :meth:`FamilyMapping.normalise_keys`.
"""
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

import numpy as np

# The family table lives in its own module, which imports no family: re-exported here.
from libai.models.pretrained.registry import mapping_for_class, mapping_for_config, register

__all__ = [
    "Rule",
    "FamilyMapping",
    "register",
    "mapping_for_class",
    "mapping_for_config",
    "same",
    "transposed",
    "fused_qkv",
    "fused_heads",
    "split_fused_heads",
]

Array = np.ndarray


def _identity(x: Array) -> Array:
    return x


def _one(x: Array) -> Tuple[Array, ...]:
    return (x,)


@dataclass(frozen=True)
class Rule:
    """One libai tensor ``ours`` made from the Hugging Face tensors ``theirs``.

    ``load(*their_arrays) -> our_array`` and ``save(our_array) -> their_arrays`` are inverses.
    """

    ours: str
    theirs: Tuple[str, ...]
    load: Callable[..., Array] = _identity
    save: Callable[[Array], Tuple[Array, ...]] = _one


def same(ours: str, theirs: str) -> Rule:
    """Copied as it is."""
    return Rule(ours, (theirs,))


def transposed(ours: str, theirs: str) -> Rule:
    """A 2-D weight stored transposed (GPT-2's Conv1D keeps ``[in, out]``)."""
    return Rule(ours, (theirs,), lambda w: np.ascontiguousarray(w.T),
                lambda w: (np.ascontiguousarray(w.T),))


def fused_heads(parts: Sequence[Array], num_heads: int) -> Array:
    """``k`` projections ``[H, ...]`` -> libai's fused ``[heads, k, head_size, ...]`` rows.

    libai's attention lays its fused projection out head by head, so that splitting the output
    rows over tensor-parallel ranks hands each rank whole heads with their own q, k and v.
    """
    stacked = np.stack(parts)  # [k, H, ...]
    k, hidden = stacked.shape[:2]
    rest = stacked.shape[2:]
    per_head = stacked.reshape(k, num_heads, hidden // num_heads, *rest)
    return np.ascontiguousarray(np.swapaxes(per_head, 0, 1)).reshape(k * hidden, *rest)


def split_fused_heads(fused: Array, parts: int, num_heads: int) -> Tuple[Array, ...]:
    """Inverse of :func:`fused_heads`."""
    rows = fused.shape[0]
    rest = fused.shape[1:]
    per_head = fused.reshape(num_heads, parts, rows // (parts * num_heads), *rest)
    stacked = np.swapaxes(per_head, 0, 1).reshape(parts, rows // parts, *rest)
    return tuple(np.ascontiguousarray(p) for p in stacked)


def fused_qkv(ours: str, theirs: Sequence[str], num_heads: int) -> Rule:
    """Separate projections (q, k, v; or k, v) -> one per-head fused libai projection."""
    count = len(theirs)
    return Rule(
        ours, tuple(theirs),
        lambda *parts: fused_heads(parts, num_heads),
        lambda fused: split_fused_heads(fused, count, num_heads),
    )


@dataclass
class Target:
    """A libai class a family can build: where its base model sits and which head it has."""

    prefix: str  # libai state-dict prefix of the base model ("" or "GPT_model.")
    head: str  # a name the family's rules understand ("lm", "pretraining", "classifier", ...)
    extra_args: Callable[[Mapping[str, Any]], Dict[str, Any]] = field(default=lambda cfg: {})


class FamilyMapping:
    """Base class of one family's mapping. Subclasses set the class attributes and methods."""

    model_types: Tuple[str, ...] = ()  # config.json "model_type" values
    targets: Dict[str, Target] = {}  # libai class name -> Target
    default_target: Dict[str, str] = {}  # HF "architectures" entry -> libai class name
    hf_prefix: str = ""  # prefix of the base model inside HF head models ("transformer.")
    hf_head_keys: Tuple[str, ...] = ()  # key prefixes of HF heads (unused by a base model)
    ignorable: Tuple[str, ...] = ()  # regexes of HF keys that carry no weights (buffers)
    # the libai class of each Auto class ("model", "causal_lm", "seq2seq_lm") this family serves
    auto_classes: Dict[str, str] = {}

    # ---------------------------------------------------------------- config
    def check_config(self, cfg: Mapping[str, Any]) -> None:
        """Refuse ``config.json`` settings the libai model cannot compute."""

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        raise NotImplementedError

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        """``config.json`` for ``model``; ``base`` is the config it was loaded from, if any."""
        raise NotImplementedError

    # ---------------------------------------------------------------- weights
    def rules(self, cfg: Mapping[str, Any], target: str) -> List[Rule]:
        raise NotImplementedError

    def tied(self, cfg: Mapping[str, Any], target: str) -> Dict[str, str]:
        """HF keys that, when present, must equal another HF key (tied copies)."""
        return {}

    def normalise_keys(self, state: Dict[str, Array]) -> Dict[str, Array]:
        """Give a bare base-model checkpoint the head model's prefix."""
        if not self.hf_prefix or any(k.startswith(self.hf_prefix) for k in state):
            return state
        return {(k if k.startswith(self.hf_head_keys) else self.hf_prefix + k): v
                for k, v in state.items()}

    def is_ignorable(self, key: str) -> bool:
        return any(re.search(p, key) for p in self.ignorable)

    def base_model(self, model: Any) -> Any:
        """The base model inside a head model (``model.GPT_model``), or ``model`` itself.

        The attribute is named by the targets' libai prefixes, so a family states it once.
        """
        for target in self.targets.values():
            if target.prefix and hasattr(model, target.prefix[:-1]):
                return getattr(model, target.prefix[:-1])
        return model
