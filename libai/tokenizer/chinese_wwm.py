"""Chinese whole-word marks: which CJK characters continue a word rather than start one.

BERT splits Chinese into single characters, so its word-piece ``##`` marks say nothing about
Chinese words. Whole-word masking needs that knowledge (mask all of 天气, never just 气), so with
``do_chinese_wwm=True`` a word segmenter groups each run of CJK characters into words and every
character after a word's first is written ``##字``. The mark is for masking only: such a token
keeps the id of the plain character, so the model input is the same as without it.
"""
from typing import Callable, List, Sequence

from libai.tokenizer.unicode_chars import is_cjk

__all__ = ["Segmenter", "default_segmenter", "continuation_flags", "mark_continuations"]

#: A word segmenter: a run of CJK characters -> its words, in order (e.g. ``jieba.lcut``).
Segmenter = Callable[[str], Sequence[str]]


def default_segmenter() -> Segmenter:
    """``jieba.lcut`` when jieba is installed; otherwise an ImportError saying what to do."""
    try:
        import jieba  # noqa: F401  (optional dependency)
    except ImportError:
        raise ImportError(
            "do_chinese_wwm=True needs a Chinese word segmenter: `pip install jieba`, or pass "
            "chinese_word_segmenter=<callable str -> list of words> to BertTokenizer"
        ) from None
    return jieba.lcut


def _cjk_runs(text: str) -> List[str]:
    runs: List[str] = []
    current: List[str] = []
    for char in text:
        if is_cjk(char):
            current.append(char)
        elif current:
            runs.append("".join(current))
            current = []
    if current:
        runs.append("".join(current))
    return runs


def continuation_flags(text: str, segmenter: Segmenter) -> List[bool]:
    """For each CJK character of ``text``, in order: True when it continues a word."""
    flags: List[bool] = []
    for run in _cjk_runs(text):
        words = [word for word in segmenter(run) if word]
        if "".join(words) != run:
            raise ValueError(
                f"the Chinese word segmenter must return words that join back into its input; "
                f"for {run!r} it returned {words!r}"
            )
        for word in words:
            flags.append(False)
            flags.extend([True] * (len(word) - 1))
    return flags


def mark_continuations(words: List[str], flags: List[bool]) -> List[str]:
    """Prefix ``##`` to every single-CJK-character word whose flag says it continues a word.

    ``words`` is the basic tokenizer's output for the text ``flags`` was computed on; each of
    its CJK characters consumes one flag, in order.
    """
    marked: List[str] = []
    position = 0
    for word in words:
        cjk_count = sum(1 for char in word if is_cjk(char))
        if position + cjk_count > len(flags):
            break
        if cjk_count == 1 and len(word) == 1 and flags[position]:
            word = "##" + word
        position += cjk_count
        marked.append(word)
    if position != len(flags) or len(marked) != len(words):
        raise RuntimeError(
            f"internal error: {len(flags)} CJK characters were segmented but the tokenizer saw a "
            "different number; please report the text"
        )
    return marked
