"""LiBai's ``libai.tokenizer.tokenization_base``: the base class and BERT's character classes
under LiBai's names. The implementations live in :mod:`libai.tokenizer.base`,
:mod:`libai.tokenizer.pretrained` and :mod:`libai.tokenizer.unicode_chars`."""
from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.pretrained import (
    ADDED_TOKENS_FILE,
    SPECIAL_TOKENS_MAP_FILE,
    TOKENIZER_CONFIG_FILE,
)
from libai.tokenizer.unicode_chars import is_control as _is_control
from libai.tokenizer.unicode_chars import is_punctuation as _is_punctuation
from libai.tokenizer.unicode_chars import is_whitespace as _is_whitespace

PreTrainedTokenizer = BaseTokenizer

__all__ = [
    "PreTrainedTokenizer",
    "SPECIAL_TOKENS_MAP_FILE",
    "ADDED_TOKENS_FILE",
    "TOKENIZER_CONFIG_FILE",
    "_is_control",
    "_is_punctuation",
    "_is_whitespace",
]
