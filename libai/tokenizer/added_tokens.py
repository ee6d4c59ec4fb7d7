"""Cutting added tokens out of text before the tokenizer's algorithm sees it.

Special tokens (``[CLS]``, ``<|endoftext|>``) and tokens registered with ``add_tokens`` must
come out of ``tokenize`` whole, so the text is first cut at every occurrence of one of them and
only the pieces in between go to WordPiece, BPE or SentencePiece. Longer tokens win over their
prefixes (``<extra_id_10>`` before ``<extra_id_1>``).

Whitespace next to an added token goes with the token: ``"a [SEP] b"`` gives ``a``, ``[SEP]``,
``b`` for every tokenizer, also for byte-level BPE, where a space is otherwise part of the next
token (``Ġb``). This is LiBai's (and Hugging Face's original) rule; ``decode`` therefore puts
one space around added tokens (see ``spaces_between_special_tokens``).

A tokenizer that lower-cases its input also matches its ordinary added tokens in any case
(``"AAA"`` finds the added ``"aaa"``), because it would have lower-cased the text anyway;
special tokens always match exactly as written.
"""
import re
from typing import Iterable, List, Optional, Set, Tuple

__all__ = ["NoSplitTokens"]


class NoSplitTokens:
    """The set of tokens that are never split, and the splitter built from it."""

    def __init__(self) -> None:
        self.exact: Set[str] = set()
        self.caseless: Set[str] = set()  # stored lower-cased
        self._pattern: Optional["re.Pattern[str]"] = None

    def __contains__(self, token: object) -> bool:
        return token in self.exact or token in self.caseless

    def add(self, tokens: Iterable[str], caseless: bool = False) -> None:
        """Register tokens; ``caseless=True`` matches them in any case (store them lower-cased)."""
        target = self.caseless if caseless else self.exact
        for token in tokens:
            target.add(token)
        self._pattern = None

    def split(self, text: str, strip: bool = True) -> List[Tuple[str, bool]]:
        """``text`` as ``(piece, is_token)`` runs; a matched token is returned in its registered
        spelling, and whitespace touching a token is dropped (see the module docstring) unless
        ``strip=False`` (Llama-2's SentencePiece tokenizer keeps it)."""
        if not self.exact and not self.caseless:
            return [(text, False)] if text else []
        if self._pattern is None:
            self._pattern = self._compile()
        runs: List[Tuple[str, bool]] = []
        position = 0
        for match in self._pattern.finditer(text):
            if match.start() > position:
                runs.append((text[position:match.start()], False))
            found = match.group(0)
            runs.append((found if found in self.exact else found.lower(), True))
            position = match.end()
        if position < len(text):
            runs.append((text[position:], False))
        return _strip_around_tokens(runs) if strip else runs

    def _compile(self) -> "re.Pattern[str]":
        alternatives = [(t, re.escape(t)) for t in self.exact]
        alternatives += [(t, "(?i:" + re.escape(t) + ")") for t in self.caseless - self.exact]
        alternatives.sort(key=lambda item: (-len(item[0]), item[0]))
        return re.compile("|".join(pattern for _, pattern in alternatives))

    def __getstate__(self) -> dict:  # the compiled pattern is rebuilt on first use
        return {"exact": self.exact, "caseless": self.caseless}

    def __setstate__(self, state: dict) -> None:
        self.exact, self.caseless, self._pattern = state["exact"], state["caseless"], None


def _strip_around_tokens(runs: List[Tuple[str, bool]]) -> List[Tuple[str, bool]]:
    stripped: List[Tuple[str, bool]] = []
    for index, (piece, is_token) in enumerate(runs):
        if not is_token:
            if index > 0 and runs[index - 1][1]:
                piece = piece.lstrip()
            if index + 1 < len(runs) and runs[index + 1][1]:
                piece = piece.rstrip()
            if not piece:
                continue
        stripped.append((piece, is_token))
    return stripped
