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
from typing import List

__all__ = ["split_sentences"]

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


def _split_paragraph(paragraph: str) -> List[str]:
    sentences: List[str] = []
    start = 0
    for match in _BOUNDARY.finditer(paragraph):
        end = match.end(1)
        candidate = paragraph[start:end]
        if match.group(1).startswith(".") and _ends_with_abbreviation(candidate):
            continue
        sentences.append(candidate)
        start = match.end()
    sentences.append(paragraph[start:])
    out: List[str] = []
    for sentence in sentences:
        pieces = _CJK_BOUNDARY.split(sentence)
        # re.split with a group alternates text and terminators: glue each terminator back.
        for i in range(0, len(pieces), 2):
            piece = pieces[i] + (pieces[i + 1] if i + 1 < len(pieces) else "")
            if piece.strip():
                out.append(piece.strip())
    return out


def split_sentences(text: str) -> List[str]:
    """Split ``text`` into sentences (stripped, never empty); ``[]`` for blank text."""
    sentences: List[str] = []
    for paragraph in _PARAGRAPH.split(text):
        paragraph = " ".join(paragraph.split()) if "\n" in paragraph else paragraph
        if paragraph.strip():
            sentences.extend(_split_paragraph(paragraph))
    return sentences
