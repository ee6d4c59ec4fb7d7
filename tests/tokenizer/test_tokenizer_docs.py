"""The worked examples of docs/tokenizers.md run, in order, and print what the page shows.

Python blocks share one namespace; bash blocks run the repository's tools. A ```text block
right after a code block is that block's expected output (durations are ignored).
"""
import os
import re
import shlex
import subprocess
import sys

from tests.doc_pages import REPO_ROOT as REPO
from tests.doc_pages import doc_path, fenced_blocks

DOC = doc_path("tokenizers.md")


def _blocks():
    """(language, code, expected output or None) for each python/bash block of the page."""
    blocks = fenced_blocks("tokenizers.md")
    out = []
    for block, following in zip(blocks, blocks[1:] + [None]):
        if block.lang not in ("python", "bash"):
            continue
        expected = None
        if following is not None and following.lang == "text" and following.follows_block:
            expected = following.body
        out.append((block.lang, block.body, expected))
    return out


def _run_bash(code):
    output = []
    for line in code.strip().splitlines():
        argv = shlex.split(line)
        assert argv[:2] == ["python", "tools/train_vocab.py"], f"unexpected command: {line}"
        argv = [sys.executable, os.path.join(REPO, "tools", "train_vocab.py")] + argv[2:]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        output.append(result.stdout)
    return "".join(output)


def _without_durations(text):
    return re.sub(r"in \d+\.\ds", "in <t>s", text)


def test_every_example_runs_and_prints_what_the_page_shows(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    blocks = _blocks()
    assert len(blocks) >= 8
    namespace = {"__name__": "docs_example"}
    for language, code, expected in blocks:
        if language == "python":
            exec(compile(code, DOC, "exec"), namespace)
            printed = capsys.readouterr().out
        else:
            printed = _run_bash(code)
        if expected is not None:
            assert _without_durations(printed) == _without_durations(expected), code
