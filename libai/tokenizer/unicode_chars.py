"""Character classes that both the BERT tokenizer and the WordPiece trainer must agree on.

WordPiece vocabularies are only useful when training and encoding split text the same way, so
the notion of "whitespace", "control character", "punctuation" and "CJK character" lives here,
in one place, rather than in each user.
"""
import unicodedata
from typing import Callable, Optional

__all__ = ["CharTable", "is_whitespace", "is_control", "is_punctuation", "is_cjk", "strip_accents"]

# Blocks of CJK Unified Ideographs (and their extensions and compatibility forms). Hangul,
# Hiragana and Katakana are deliberately absent: they are written with spaces between words,
# so BERT treats them like any other alphabet.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def is_whitespace(char: str) -> bool:
    """True for characters BERT treats as a word separator (tab, newline and Unicode ``Zs``)."""
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def is_control(char: str) -> bool:
    """True for characters of Unicode's "Other" categories (control, format, private use,
    surrogate, unassigned), which carry no text and are dropped, as BERT does.

    Tab, newline and carriage return are control characters to Unicode but separate words, so
    they count as whitespace instead.
    """
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char).startswith("C")


def is_punctuation(char: str) -> bool:
    """True for Unicode punctuation and for every non-alphanumeric printable ASCII symbol.

    ASCII symbols such as ``$``, ``+`` and ``^`` are not Unicode punctuation (they are ``S*``),
    but splitting them off words keeps ``$5`` and ``a+b`` from becoming rare whole tokens.
    """
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def is_cjk(char: str) -> bool:
    """True for CJK ideographs, which are written without spaces and so become one token each."""
    code = ord(char)
    if code < 0x3400:
        return False
    return any(low <= code <= high for low, high in _CJK_RANGES)


def strip_accents(text: str) -> str:
    """Remove combining marks after canonical decomposition: ``"Café"`` -> ``"Cafe"``."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")


class CharTable(dict):
    """A ``str.translate`` table that applies ``rule`` to each character the first time it is
    seen, and remembers the answer.

    Classifying characters one at a time in Python dominates tokenization time; ``translate``
    runs in C and calls back only for characters this table has not met yet. ``rule`` returns
    the replacement text, or None to delete the character.
    """

    def __init__(self, rule: Callable[[str], Optional[str]]) -> None:
        super().__init__()
        self.rule = rule

    def __missing__(self, code: int) -> Optional[str]:
        value = self.rule(chr(code))
        self[code] = value
        return value
