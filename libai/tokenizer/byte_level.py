"""The two fixed conventions of GPT-2's byte-level BPE: the byte alphabet and the pre-tokenizer.

Byte-level BPE works on UTF-8 bytes, so any text can be encoded with no unknown token. BPE
vocabularies are stored as JSON strings, though, and raw bytes such as ``0x00`` or ``0x20`` make
unreadable (or, for a space, ambiguous) tokens. GPT-2 therefore gives every byte a visible
stand-in character: printable Latin-1 bytes stand for themselves and the other 68 bytes are
shifted to code points from U+0100 up. A space becomes ``"Ġ"`` (U+0120) this way. Real GPT-2
vocabularies are written in this alphabet, so it has to be reproduced exactly.

Before BPE, text is cut into *pre-tokens* so that merges never cross a word boundary. GPT-2
states the rule with the third-party ``regex`` module::

    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

The standard ``re`` module has no ``\\p{L}`` (letter) or ``\\p{N}`` (number) classes, and
spelling them out as ranges makes ``re`` slow. :class:`Pretokenizer` instead writes each
character's class into a same-length copy of the text (ASCII stays itself; any other letter
becomes ``a``, number ``0``, whitespace ``\\t``, symbol ``!``), runs the rule with ASCII classes
on the copy, and cuts the original text at the same places. Only the class of a character and
the literal ``'``, space and contraction letters matter to the rule, and those survive the copy,
so the cuts are GPT-2's. Classes come from :mod:`unicodedata`, i.e. from Python's Unicode version.
"""
import functools
import re
import unicodedata
from typing import Dict, List, Optional

from libai.tokenizer.unicode_chars import CharTable

__all__ = ["bytes_to_unicode", "unicode_to_bytes", "Pretokenizer", "pretokenize"]

# Unicode's White_Space property, which is what ``\s`` means to ``regex`` (Python's ``re``
# would also match U+001C..U+001F, which GPT-2 treats as symbols).
_NON_ASCII_WHITE_SPACE = frozenset(
    [0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000] + list(range(0x2000, 0x200B))
)
_WS = "\\t\\n\\x0b\\x0c\\r "
_PATTERN = re.compile(
    r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+"
    f"| ?[^{_WS}A-Za-z0-9]+|[{_WS}]+(?![^{_WS}])|[{_WS}]+"
)


@functools.lru_cache(maxsize=None)
def bytes_to_unicode() -> Dict[int, str]:
    """Map every byte value 0..255 to the visible character that stands for it in a vocabulary."""
    visible = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\xa1"), ord("\xac") + 1))
        + list(range(ord("\xae"), ord("\xff") + 1))
    )
    mapping = {byte: chr(byte) for byte in visible}
    shifted = 0
    for byte in range(256):
        if byte not in mapping:
            mapping[byte] = chr(256 + shifted)
            shifted += 1
    return mapping


@functools.lru_cache(maxsize=None)
def unicode_to_bytes() -> Dict[str, int]:
    """The inverse of :func:`bytes_to_unicode`."""
    return {char: byte for byte, char in bytes_to_unicode().items()}


def _class_stand_in(char: str) -> Optional[str]:
    """The ASCII character that has ``char``'s class in the pre-tokenization rule."""
    if char.isascii():
        return char
    if ord(char) in _NON_ASCII_WHITE_SPACE:
        return "\t"
    major = unicodedata.category(char)[0]
    return "a" if major == "L" else "0" if major == "N" else "!"


class Pretokenizer:
    """GPT-2's pre-tokenization rule (see the module docstring).

    Every character of the input belongs to exactly one pre-token, which is what makes
    byte-level decoding lossless: ``"".join(Pretokenizer()(text)) == text``. Each instance
    remembers the classes of the characters it has met.
    """

    def __init__(self) -> None:
        self._classes = CharTable(_class_stand_in)

    def __call__(self, text: str) -> List[str]:
        if text.isascii():
            return _PATTERN.findall(text)
        stand_ins = text.translate(self._classes)
        return [text[m.start():m.end()] for m in _PATTERN.finditer(stand_ins)]


def pretokenize(text: str) -> List[str]:
    """Cut ``text`` into GPT-2 pre-tokens (a convenience over a fresh :class:`Pretokenizer`)."""
    return Pretokenizer()(text)
