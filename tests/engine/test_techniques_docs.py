"""docs/techniques/*.md: every page's examples run as written and print what the page shows.

Each page's Python blocks run in order, as one script, in a fresh process from the repository
root (they import ``tests.engine.toy``). A block preceded by ``<!-- not run -->`` is skipped
(it needs several processes or a GPU). Every ``text`` block after a page's first Python block
is output the page promises: each of its non-empty lines must be printed, in the page's order.
"""
import os
import re
import sys

import pytest

from libai.utils.testing import run_retrying_segfaults

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(REPO_ROOT, "docs", "techniques")
FENCE = re.compile(r"(?P<skip><!-- not run[^>]*-->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)
PAGES = ["graph_mode", "gradient_accumulation", "amp", "activation_checkpointing", "zero",
         "gradient_clipping", "ema", "nan_detection"]


def _script_and_promises(page):
    with open(os.path.join(DOCS, f"{page}.md"), encoding="utf-8") as f:
        text = f.read()
    code, expected = [], []
    for m in FENCE.finditer(text):
        if m.group("lang") == "python" and not m.group("skip"):
            code.append(m.group("body"))
        elif m.group("lang") == "text" and code:
            expected.extend(line for line in m.group("body").splitlines() if line.strip())
    return "\n".join(code), expected


def test_the_index_links_every_page():
    with open(os.path.join(DOCS, "index.md"), encoding="utf-8") as f:
        index = f.read()
    for page in PAGES:
        assert f"]({page}.md)" in index, page
    assert "test_graph_equivalence.py" in index


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run_and_print_what_the_page_shows(page, tmp_path):
    code, expected = _script_and_promises(page)
    assert code and expected, f"docs/techniques/{page}.md lost its examples"
    script = tmp_path / f"{page}_examples.py"
    script.write_text(code)
    proc = run_retrying_segfaults([sys.executable, str(script)], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": REPO_ROOT})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    position = 0
    for line in expected:
        found = proc.stdout.find(line, position)
        assert found >= 0, f"{page}.md promises {line!r}, but its examples printed:\n{proc.stdout[-3000:]}"
        position = found + len(line)
