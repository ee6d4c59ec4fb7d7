"""The fenced code blocks of a ``docs/`` page, for the tests that run a page's examples.

One reader for every docs test, so that they all agree on what a block is: the text between a
line opening with three backticks (and an optional language word) and the next three backticks.
Two HTML comments, on the line right above an opening fence, say more about a block:

* ``<!-- file: NAME -->``: the block's text is to be written to the file ``NAME``;
* ``<!-- not run: REASON -->``: the block is shown but not run (it needs several processes, a
  GPU or a file of its own).
"""
import os
import re
import subprocess
import sys
from typing import List, NamedTuple, Optional, Tuple

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_FENCE = re.compile(
    r"(?:<!-- file: (?P<file>\S+) -->\n|(?P<not_run><!-- not run[^>]*-->\n))?"
    r"```(?P<lang>\w*)\n(?P<body>.*?)```",
    re.S,
)


class Block(NamedTuple):
    lang: str  # the word after the opening fence ("" for none)
    body: str
    file: Optional[str]  # from a ``<!-- file: NAME -->`` line above the fence
    follows_block: bool  # only blank space separates it from the block before it
    not_run: bool = False  # a ``<!-- not run ... -->`` line above the fence


def doc_path(page: str) -> str:
    """``docs/<page>`` of this checkout (``page`` may name a subfolder: ``techniques/amp.md``)."""
    return os.path.join(REPO_ROOT, "docs", page)


def page_text(page: str, section: Optional[str] = None) -> str:
    """The text of ``docs/<page>``; with ``section`` (a heading line such as ``"## Resuming"``),
    only that section: from the heading to the next heading of level two."""
    with open(doc_path(page), encoding="utf-8") as handle:
        text = handle.read()
    if section is None:
        return text
    assert section in text, f"docs/{page} lost its section {section!r}"
    text = text[text.index(section):]
    end = text.find("\n## ", len(section))
    return text if end < 0 else text[:end]


def fenced_blocks(page: str, section: Optional[str] = None) -> List[Block]:
    """Every fenced block of ``docs/<page>`` (or of one section of it), in page order."""
    text = page_text(page, section)
    blocks, previous_end = [], None
    for match in _FENCE.finditer(text):
        adjoining = previous_end is not None and not text[previous_end:match.start()].strip()
        blocks.append(Block(match.group("lang"), match.group("body"), match.group("file"), adjoining,
                            bool(match.group("not_run"))))
        previous_end = match.end()
    return blocks


def bodies(page: str, lang: str, section: Optional[str] = None) -> List[str]:
    """The text of every ``lang`` block of the page (or section), in page order."""
    return [block.body for block in fenced_blocks(page, section) if block.lang == lang]


def only_block(page: str, lang: str, containing: str) -> str:
    """The one ``lang`` block of the page that contains ``containing``."""
    found = [body for body in bodies(page, lang) if containing in body]
    assert len(found) == 1, f"the page lost its {lang} example containing {containing!r}"
    return found[0]


def script_and_promises(page: str) -> Tuple[List[str], List[str]]:
    """A page whose examples run as one script: its Python blocks not marked ``not run``, in
    order, and the output it promises, every non-empty line of each ``text`` block after the
    first of those Python blocks."""
    code, expected = [], []
    for block in fenced_blocks(page):
        if block.lang == "python" and not block.not_run:
            code.append(block.body)
        elif block.lang == "text" and code:
            expected.extend(line for line in block.body.splitlines() if line.strip())
    return code, expected


def run_examples_script(path: str, timeout: int = 300) -> "subprocess.CompletedProcess[str]":
    """Run a script of a page's examples in a fresh process from the repository root (so they
    can import ``tests.*``), run once more only if OneFlow 0.9 segfaulted (its occasional Graph
    mode crash in code with no libai frames)."""
    from libai.utils.testing import run_retrying_segfaults

    return run_retrying_segfaults([sys.executable, str(path)], cwd=REPO_ROOT, capture_output=True,
                                  text=True, timeout=timeout,
                                  env={**os.environ, "PYTHONPATH": REPO_ROOT})


def assert_printed_in_order(out: str, expected: List[str], page: str, tail: int = 4000) -> None:
    """Each line of ``expected`` occurs in ``out``, in the page's order."""
    position = 0
    for line in expected:
        found = out.find(line, position)
        assert found >= 0, f"docs/{page} promises {line!r}, but its examples printed:\n{out[-tail:]}"
        position = found + len(line)
