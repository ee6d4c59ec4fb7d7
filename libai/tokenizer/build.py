"""Build a tokenizer from the ``tokenization`` part of a config, with a padded vocabulary size.

Tensor parallelism splits the embedding's vocabulary rows across ranks, so the row count must
divide evenly; GPUs also run faster on sizes that are multiples of 64 or 128. A model therefore
allocates ``tokenizer.padded_vocab_size`` rows: the vocabulary size rounded up to a multiple of
``make_vocab_size_divisible_by × tensor_parallel_size``. The extra rows are never produced by the
tokenizer and simply go unused.
"""
import importlib
from typing import Any, Mapping, Optional

from libai.tokenizer.base import BaseTokenizer

__all__ = ["build_tokenizer", "pad_vocab_size"]

# Spellings of the older registry-style config: ``tokenizer=dict(name="BertTokenizer", ...)``.
_BY_NAME = {
    "BertTokenizer": "libai.tokenizer.bert.BertTokenizer",
    "GPT2Tokenizer": "libai.tokenizer.gpt2.GPT2Tokenizer",
}


def pad_vocab_size(size: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is >= ``size``.

    >>> pad_vocab_size(30522, 128)
    30592
    """
    for name, value, low in (("size", size, 0), ("multiple", multiple, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"pad_vocab_size: {name} must be an int >= {low}, got {value!r}")
    return -(-size // multiple) * multiple


def build_tokenizer(cfg: Any, tensor_parallel_size: Optional[int] = None) -> BaseTokenizer:
    """Instantiate ``cfg.tokenizer`` and set its ``padded_vocab_size``.

    Args:
        cfg: the ``tokenization`` config node, e.g.
            ``dict(tokenizer=LazyCall(BertTokenizer)(vocab_file=...), append_eod=False,
            make_vocab_size_divisible_by=128)``. ``cfg.tokenizer`` may also be a ready
            tokenizer, or ``dict(name="BertTokenizer", ...)`` (the registry style).
            ``append_eod`` is read by the text pipeline, not here.
        tensor_parallel_size: ranks the embedding is split over. None takes it from the active
            :class:`~libai.utils.distributed.ParallelLayout`, or 1 when no layout is active.

    Without ``make_vocab_size_divisible_by`` (or with None), ``padded_vocab_size`` equals
    ``len(tokenizer)``.
    """
    node = _get(cfg, "tokenizer")
    if node is None:
        raise ValueError(
            "the tokenization config has no 'tokenizer'; set e.g. "
            "tokenization.tokenizer = LazyCall(BertTokenizer)(vocab_file='path/to/vocab.txt')"
        )
    tokenizer = node if isinstance(node, BaseTokenizer) else _instantiate(node)
    if not isinstance(tokenizer, BaseTokenizer):
        raise TypeError(
            f"tokenization.tokenizer built a {type(tokenizer).__name__}, not a libai tokenizer "
            "(BertTokenizer, GPT2Tokenizer or a BaseTokenizer subclass)"
        )
    divisible_by = _get(cfg, "make_vocab_size_divisible_by")
    if divisible_by is not None:
        tp_size = _tensor_parallel_size() if tensor_parallel_size is None else tensor_parallel_size
        tokenizer.padded_vocab_size = pad_vocab_size(len(tokenizer), divisible_by * tp_size)
    return tokenizer


def _get(cfg: Any, key: str) -> Any:
    if isinstance(cfg, Mapping) or hasattr(cfg, "get"):
        return cfg.get(key)
    return getattr(cfg, key, None)


def _tensor_parallel_size() -> int:
    from libai.utils import distributed as dist  # imports oneflow: only when needed

    return dist.current_layout().tensor_parallel_size if dist.has_layout() else 1


def _instantiate(node: Any) -> Any:
    """Build ``node`` with libai.config's ``instantiate``, or by its ``name`` (registry style)."""
    name = _get(node, "name")
    if _get(node, "_target_") is None and name is not None:
        if name not in _BY_NAME:
            raise ValueError(f"unknown tokenizer name {name!r}; expected one of {sorted(_BY_NAME)}")
        kwargs = {k: v for k, v in _plain(node).items() if k != "name"}
        return _locate(_BY_NAME[name])(**kwargs)
    try:
        from libai.config import instantiate
    except ImportError:
        instantiate = None
    if instantiate is not None and not callable(instantiate):
        # libai.config without its package exports yet: take the function from its module.
        instantiate = getattr(instantiate, "instantiate", None)
    if instantiate is None:
        return _call_target(node)
    return instantiate(node)


def _plain(node: Any) -> dict:
    try:
        from omegaconf import DictConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        DictConfig = ()
    if DictConfig and isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)
    return dict(node)


def _locate(path: str) -> Any:
    module_name, _, attribute = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


def _call_target(node: Any) -> Any:
    """Minimal stand-in for ``libai.config.instantiate`` on one flat ``_target_`` node."""
    kwargs = _plain(node)
    target = kwargs.pop("_target_", None)
    if target is None:
        raise ValueError("tokenization.tokenizer needs a '_target_' (use LazyCall) or a 'name'")
    if isinstance(target, str):
        target = _locate(target)
    return target(**kwargs)
