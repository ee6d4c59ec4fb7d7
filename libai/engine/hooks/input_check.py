"""Catch, in Python, the data and config mistakes that make OneFlow abort the process.

OneFlow 0.9's CPU kernels check their index inputs with ``CHECK`` statements: a label outside
``[0, num_classes)`` (``Check failed: labels[i] < depth``), a token id outside the vocabulary
or a position past the position table (``gather``) end the process with SIGABRT, exit status
134, no Python traceback and nothing saved. Typical causes are an image folder with more class
folders than ``model.num_classes``, a tokenizer whose vocabulary is larger than
``model.cfg.vocab_size``, or sequences longer than ``max_position_embeddings``.

:func:`install_input_checks` puts a forward pre-hook on every module of a model that receives
such indices, and checks what they receive first, with the config key to change in the error:

* embeddings (``libai.layers.VocabEmbedding`` / ``Embedding``, ``oneflow.nn.Embedding``):
  integer ids in ``[0, num_embeddings)``; a position table (a name holding ``position``)
  reports the sequence length instead;
* classification / token losses (``oneflow.nn.CrossEntropyLoss``,
  ``libai.layers.ParallelCrossEntropyLoss``): integer targets in ``[0, classes)`` or the loss's
  ``ignore_index``, where ``classes`` is the last dim of the logits it receives (soft targets of
  the logits' shape, from mixup, are not indices and pass).

Each check costs a min/max over the ids and a host synchronisation, so a module checks its first
``calls`` forward calls in training and its first ``calls`` in evaluation (default 20 each),
then nothing. Lazy tensors (a static graph being traced) carry no values and are not checked:
in Graph mode the checks apply to Eager evaluations only.
"""
import logging
from typing import Any, Optional, Tuple

import oneflow as flow

__all__ = ["InputCheckError", "install_input_checks"]

logger = logging.getLogger(__name__)

DEFAULT_CALLS = 20


class InputCheckError(ValueError):
    """The data or the config would make OneFlow abort: the message says what to change."""


def _values(t: flow.Tensor) -> Optional[flow.Tensor]:
    """The tensor's full local value, or None when it has none to look at (lazy)."""
    if not isinstance(t, flow.Tensor) or t.is_lazy:
        return None
    if t.is_global:
        t = t.to_global(sbp=[flow.sbp.broadcast] * len(t.sbp)).to_local()
    return t


def _min_max(t: flow.Tensor) -> Tuple[int, int]:
    if t.numel() == 0:
        return 0, 0
    low, high = flow.stack([t.min(), t.max()]).tolist()  # one host synchronisation, not two
    return int(low), int(high)


def _is_integer(t: flow.Tensor) -> bool:
    return t.dtype in (flow.int8, flow.int32, flow.int64, flow.uint8)


class _Budget:
    def __init__(self, calls: int) -> None:
        self.left = {True: int(calls), False: int(calls)}  # training mode -> checks left

    def take(self, module: flow.nn.Module) -> bool:
        if self.left[module.training] <= 0:
            return False
        self.left[module.training] -= 1
        return True


def _check_ids(name: str, module: Any, ids: Any) -> None:
    t = _values(ids)
    if t is None:
        return
    where = f"the embedding '{name}' ({type(module).__name__}, {module.num_embeddings} rows)"
    if not _is_integer(t):
        raise InputCheckError(
            f"{where} received ids of dtype {t.dtype}; ids must be integers (int64). The dataset "
            "produced floating-point ids: build its input_ids / position ids with an integer dtype"
        )
    low, high = _min_max(t)
    rows = int(module.num_embeddings)
    if 0 <= low and high < rows:
        return
    if "position" in name.lower():
        raise InputCheckError(
            f"{where} received position {high}: the sequences are {high + 1} tokens long but the "
            f"position table holds {rows}. Shorten the data's sequences (the dataset's "
            f"max_seq_length / max_seq_len, tokenization) to at most {rows} tokens, or raise the model's "
            "max position count (model.cfg.max_position_embeddings or model.cfg.max_seq_length) "
            f"to at least {high + 1}"
        )
    if "token_type" in name.lower() or "tokentype" in name.lower():
        raise InputCheckError(
            f"{where} received token type id {high if high >= rows else low}; ids must lie in "
            f"[0, {rows}). Set model.cfg.num_tokentypes to at least {high + 1}, or check the "
            "dataset's tokentype_ids"
        )
    bad = low if low < 0 else high
    raise InputCheckError(
        f"{where} received token id {bad}, outside the vocabulary [0, {rows}). The tokenizer or "
        f"the data produce ids the model has no row for: set model.cfg.vocab_size to at least "
        f"{high + 1} (libai sets it from the tokenizer when cfg.tokenization is given), or use "
        "the tokenizer the data was made with"
    )


def _check_targets(name: str, module: Any, logits: Any, target: Any) -> None:
    t, lg = _values(target), logits
    if t is None or not isinstance(lg, flow.Tensor):
        return
    if lg.ndim == t.ndim and tuple(lg.shape) == tuple(t.shape):
        return  # soft targets (mixup): probabilities, not class indices
    where = f"the loss '{name}' ({type(module).__name__})"
    if not _is_integer(t):
        raise InputCheckError(
            f"{where} received labels of dtype {t.dtype}; class labels must be integers (int64). "
            "Make the dataset's labels field an integer tensor (e.g. flow.tensor(label, dtype=flow.long))"
        )
    classes = int(lg.shape[-1])
    ignore = getattr(module, "ignore_index", None)
    if ignore is not None:
        t = t.masked_fill(t == int(ignore), 0)
    low, high = _min_max(t)
    if 0 <= low and high < classes:
        return
    bad = low if low < 0 else high
    raise InputCheckError(
        f"{where} received label {bad}, but the model predicts {classes} classes: labels must lie in "
        f"[0, {classes}). The data has more classes than the model: raise model.num_classes (or "
        f"model.cfg.num_classes / num_labels) to at least {high + 1}, or check the dataset (an image "
        "folder has one class per sub-folder; labels count from 0)"
    )


def _is_embedding(module: Any) -> bool:
    from libai.layers import Embedding, VocabEmbedding

    return isinstance(module, (Embedding, VocabEmbedding, flow.nn.Embedding))


def _is_index_loss(module: Any) -> bool:
    from libai.layers.cross_entropy import ParallelCrossEntropyLoss

    return isinstance(module, (ParallelCrossEntropyLoss, flow.nn.CrossEntropyLoss))


def install_input_checks(model: flow.nn.Module, calls: int = DEFAULT_CALLS) -> int:
    """Check the ids and labels the first ``calls`` forward calls (per mode) of each embedding
    and cross-entropy loss of ``model`` receive (see the module docstring). Safe to call twice
    (a module is hooked once). Returns the number of modules hooked."""
    hooked = 0
    for name, module in model.named_modules():
        if getattr(module, "libai_input_checked", False):
            continue
        if _is_embedding(module):
            budget = _Budget(calls)

            def pre_hook(mod: Any, inputs: Tuple[Any, ...], name: str = name, budget: _Budget = budget) -> None:
                if inputs and budget.take(mod):
                    _check_ids(name, mod, inputs[0])
        elif _is_index_loss(module):
            budget = _Budget(calls)

            def pre_hook(mod: Any, inputs: Tuple[Any, ...], name: str = name, budget: _Budget = budget) -> None:
                if len(inputs) >= 2 and budget.take(mod):
                    _check_targets(name, mod, inputs[0], inputs[1])
        else:
            continue
        module.register_forward_pre_hook(pre_hook)
        module.libai_input_checked = True
        hooked += 1
    return hooked
