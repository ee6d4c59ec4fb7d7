"""BERT's two tokenization stages, usable on their own: text -> words, word -> WordPiece pieces.

:class:`BasicTokenizer` cleans text and splits it into words and punctuation marks;
:class:`WordpieceTokenizer` cuts each word into the longest pieces the vocabulary holds, marking
every piece after the first with ``##``. The WordPiece trainer uses the same
:class:`BasicTokenizer`, so a trained vocabulary fits the text the way BERT will see it.
"""
import unicodedata
from typing import Iterable, List, Mapping, Optional

from libai.tokenizer.unicode_chars import (
    CharTable,
    is_cjk,
    is_control,
    is_punctuation,
    is_whitespace,
    strip_accents as _strip_accents,
)

__all__ = ["BasicTokenizer", "WordpieceTokenizer"]


class BasicTokenizer:
    """Unicode composition (NFC), whitespace cleanup, control-character removal, optional
    lower-casing and accent stripping, punctuation splitting, and one token per CJK character.

    Args:
        do_lower_case: lower-case words (for "uncased" vocabularies).
        never_split: words kept exactly as written (no lower-casing, no punctuation split).
        tokenize_chinese_chars: put each CJK ideograph in its own token. Chinese and Japanese
            have no spaces between words, so without this a whole sentence is one "word".
        strip_accents: remove accents (``é`` -> ``e``). None means "when lower-casing", the
            convention of the uncased BERT vocabularies.
    """

    def __init__(
        self,
        do_lower_case: bool = True,
        never_split: Optional[Iterable[str]] = None,
        tokenize_chinese_chars: bool = True,
        strip_accents: Optional[bool] = None,
    ) -> None:
        self.do_lower_case = do_lower_case
        self.never_split = set(never_split or ())
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.strip_accents = do_lower_case if strip_accents is None else strip_accents
        self._clean_table = CharTable(_clean_rule)
        split_rule = _clean_and_split_cjk_rule if tokenize_chinese_chars else _clean_rule
        self._split_table = CharTable(split_rule)
        self._punctuation_table = CharTable(_punctuation_rule)

    def clean_text(self, text: str) -> str:
        """Compose characters (NFC), drop NUL, U+FFFD and control characters, and turn every
        whitespace into a plain space.

        NFC first, so that ``e`` + combining acute and the single character ``é`` are the
        same word whichever way the text spelled it.
        """
        return unicodedata.normalize("NFC", text).translate(self._clean_table)

    def tokenize(self, text: str, never_split: Optional[Iterable[str]] = None) -> List[str]:
        """Split ``text`` into words and single punctuation marks; ``never_split`` adds words
        to keep whole for this call."""
        keep = self.never_split.union(never_split) if never_split else self.never_split
        text = unicodedata.normalize("NFC", text).translate(self._split_table)
        tokens: List[str] = []
        for word in text.split():
            if word in keep:
                tokens.append(word)
                continue
            if self.do_lower_case:
                word = word.lower()
            if self.strip_accents and not word.isascii():
                word = _strip_accents(word)
            tokens.extend(word.translate(self._punctuation_table).split())
        return tokens


def _clean_rule(char: str) -> Optional[str]:
    if char in ("\x00", "\ufffd") or is_control(char):
        return None
    return " " if is_whitespace(char) else char


def _clean_and_split_cjk_rule(char: str) -> Optional[str]:
    cleaned = _clean_rule(char)
    return f" {char} " if cleaned is not None and is_cjk(char) else cleaned


def _punctuation_rule(char: str) -> str:
    return f" {char} " if is_punctuation(char) else char


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece.

    At each position the longest vocabulary entry that matches is taken (with a ``##`` prefix
    after the first piece). If some position matches nothing, or the word is longer than
    ``max_input_chars_per_word``, the whole word becomes ``unk_token``: a half-encoded word
    would mislead the model more than an honest "unknown".
    """

    def __init__(
        self, vocab: Mapping[str, int], unk_token: str, max_input_chars_per_word: int = 100
    ) -> None:
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize_word(self, word: str) -> List[str]:
        """Pieces of one whitespace-free word."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces: List[str] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while end > start:
                candidate = word[start:end] if start == 0 else "##" + word[start:end]
                if candidate in self.vocab:
                    found = candidate
                    break
                end -= 1
            if found is None:
                return [self.unk_token]
            pieces.append(found)
            start = end
        return pieces

    def tokenize(self, text: str) -> List[str]:
        """Pieces of every whitespace-separated word of ``text``."""
        pieces: List[str] = []
        for word in text.split():
            pieces.extend(self.tokenize_word(word))
        return pieces
