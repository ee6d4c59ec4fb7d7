"""Build a tokenizer from the ``tokenization`` part of a config, with a padded vocabulary size.

A model allocates ``tokenizer.padded_vocab_size`` embedding rows: ``len(tokenizer)`` rounded up
to a multiple of ``make_vocab_size_divisible_by × tensor_parallel_size`` (see
:mod:`libai.tokenizer.vocab_size` for why).
"""
import importlib
from typing import Any, Mapping, Optional

from omegaconf import DictConfig, OmegaConf

from libai.config import instantiate
from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.vocab_size import pad_vocab_size

__all__ = ["build_tokenizer", "pad_vocab_size"]

# Spellings of the older registry-style config: ``tokenizer=dict(name="BertTokenizer", ...)``.
_BY_NAME = {
    "BertTokenizer": "libai.tokenizer.bert.BertTokenizer",
    "GPT2Tokenizer": "libai.tokenizer.gpt2.GPT2Tokenizer",
    "RobertaTokenizer": "libai.tokenizer.roberta.RobertaTokenizer",
    "T5Tokenizer": "libai.tokenizer.t5.T5Tokenizer",
}


def build_tokenizer(cfg: Any, tensor_parallel_size: Optional[int] = None) -> Any:
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
    ``len(tokenizer)``. A tokenizer that is not a libai one (a project's own class) is returned
    as built, untouched.
    """
    node = _get(cfg, "tokenizer")
    if node is None:
        raise ValueError(
            "the tokenization config has no 'tokenizer'; set e.g. "
            "tokenization.tokenizer = LazyCall(BertTokenizer)(vocab_file='path/to/vocab.txt')"
        )
    tokenizer = node if isinstance(node, BaseTokenizer) else _instantiate(node)
    if not isinstance(tokenizer, BaseTokenizer):
        # A project's own tokenizer class (LiBai's Llama and Baichuan projects wrap a
        # SentencePiece model in a plain class): used as it is, as LiBai does. Only libai
        # tokenizers get a padded vocabulary size; a model config names its own vocab_size.
        if any(callable(getattr(tokenizer, m, None)) for m in ("encode", "tokenize")):
            return tokenizer
        raise TypeError(
            f"tokenization.tokenizer built a {type(tokenizer).__name__}, not a libai tokenizer "
            f"({', '.join(_BY_NAME)} or a BaseTokenizer / PreTrainedTokenizer subclass) nor an "
            f"object with an encode() or tokenize() method"
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
    if _get(node, "_target_") is None:
        if name is None:
            raise ValueError("tokenization.tokenizer needs a '_target_' (use LazyCall) or a 'name'")
        if name not in _BY_NAME:
            raise ValueError(f"unknown tokenizer name {name!r}; expected one of {sorted(_BY_NAME)}")
        kwargs = {k: v for k, v in _plain(node).items() if k != "name"}
        return _locate(_BY_NAME[name])(**kwargs)
    return instantiate(node)


def _plain(node: Any) -> dict:
    if isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)
    return dict(node)


def _locate(path: str) -> Any:
    module_name, _, attribute = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)
