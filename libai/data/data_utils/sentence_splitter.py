"""A small rule-based sentence splitter for BERT-style sentence-level corpora.

BERT's pair sampling needs sentence boundaries, but the usual tool (nltk's punkt) has to
download its model, which this project never does at run time. These rules get the common
cases of English and similar prose right, which is all sentence-pair sampling needs: a wrong
boundary only moves where segment A ends.

Rules, in order:
  * a blank line (paragraph break) always ends a sentence;
  * ``.``, ``!``, ``?`` (or CJK ``。！？``), optionally followed by closing quotes or brackets,
    end a sentence when followed by whitespace and then an upper-case letter, a digit or an
    opening quote/bracket;
  * ...except after a known abbreviation (``Mr.``, ``e.g.``, ``etc.``) or a single initial
    (``J. Smith``);
  * CJK terminators end a sentence even without following whitespace.
"""
import re
from typing import List, Tuple

__all__ = ["sentence_spans", "split_sentences"]

_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st vs etc e.g i.e cf al fig figs eq no nos vol pp ch sec
    inc ltd co corp dept est approx jan feb mar apr jun jul aug sep sept oct nov dec""".split()
)
# A terminator plus closing punctuation, then whitespace, then something that starts a sentence.
_BOUNDARY = re.compile(r"""([.!?]+["')\]]*)(\s+)(?=["'(\[]?[A-Z0-9\u00C0-\u024F])""")
_CJK_BOUNDARY = re.compile(r"([。！？]+[」』”’）]*)")
_PARAGRAPH = re.compile(r"\n\s*\n")


def _ends_with_abbreviation(chunk: str) -> bool:
    words = chunk.rstrip("\"')]").split()
    if not words:
        return False
    last = words[-1].rstrip(".!?").lower()
    if len(last) == 1 and last.isalpha():  # an initial: "J. Smith"
        return True
    return last in _ABBREVIATIONS


def _paragraph_spans(paragraph: str, base: int) -> List[Tuple[int, int]]:
    """``(start, end)`` of each sentence of ``paragraph`` (offsets shifted by ``base``), with
    surrounding whitespace excluded."""
    cuts = [0]
    start = 0
    for match in _BOUNDARY.finditer(paragraph):
        if match.group(1).startswith(".") and _ends_with_abbreviation(paragraph[start : match.end(1)]):
            continue
        cuts.append(match.end(1))
        start = match.end()
    cuts.append(len(paragraph))
    spans: List[Tuple[int, int]] = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        inner = [lo] + [m.end() for m in _CJK_BOUNDARY.finditer(paragraph, lo, hi)] + [hi]
        for a, b in zip(inner[:-1], inner[1:]):
            piece = paragraph[a:b]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                spans.append((base + a + lead, base + a + len(piece.rstrip())))
    return spans


def _paragraphs(text: str) -> List[Tuple[int, int]]:
    """``(start, end)`` of each paragraph (text between blank lines)."""
    bounds, start = [], 0
    for match in _PARAGRAPH.finditer(text):
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    return bounds


def sentence_spans(text: str) -> List[Tuple[int, int]]:
    """``(start, end)`` offsets of each sentence of ``text``, whitespace around it excluded."""
    return [span for lo, hi in _paragraphs(text) for span in _paragraph_spans(text[lo:hi], lo)]


def split_sentences(text: str, keep_newlines: bool = False) -> List[str]:
    """Split ``text`` into sentences, never empty; ``[]`` for blank text.

    By default each sentence is stripped, and a sentence of a paragraph that spans lines has
    its whitespace runs collapsed to single spaces. With ``keep_newlines`` the cut points are
    the same but each sentence keeps the whitespace (line breaks included) that follows it, so
    the sentences joined give back the text without its leading whitespace: what a tokenizer
    that encodes newlines (GPT-2's) should see. LiBai's ``--keep-newlines`` asks for this.
    """
    if keep_newlines:
        spans = sentence_spans(text)
        ends = [s for s, _ in spans[1:]] + [len(text)]
        return [text[s:e] for (s, _), e in zip(spans, ends)]
    out: List[str] = []
    for lo, hi in _paragraphs(text):
        collapse = "\n" in text[lo:hi]
        for s, e in _paragraph_spans(text[lo:hi], lo):
            out.append(" ".join(text[s:e].split()) if collapse else text[s:e])
    return out
