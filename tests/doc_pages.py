"""The fenced code blocks of a ``docs/`` page, for the tests that run a page's examples."""
import os
import re
from typing import List, NamedTuple, Optional

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# An optional ``<!-- file: NAME -->`` line right above the opening fence names the file the
# block's text is to be written to.
_FENCE = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)


class Block(NamedTuple):
    lang: str  # the word after the opening fence ("" for none)
    body: str
    file: Optional[str]  # from a ``<!-- file: NAME -->`` line above the fence
    follows_block: bool  # only blank space separates it from the block before it


def doc_path(page: str) -> str:
    """``docs/<page>`` of this checkout."""
    return os.path.join(REPO_ROOT, "docs", page)


def fenced_blocks(page: str) -> List[Block]:
    """Every fenced block of ``docs/<page>``, in page order."""
    with open(doc_path(page), encoding="utf-8") as handle:
        text = handle.read()
    blocks, previous_end = [], None
    for match in _FENCE.finditer(text):
        adjoining = previous_end is not None and not text[previous_end:match.start()].strip()
        blocks.append(Block(match.group("lang"), match.group("body"), match.group("file"), adjoining))
        previous_end = match.end()
    return blocks
