"""docs/augmentation.md: its Python examples run as written and print what the page says."""

import re
import subprocess
import sys

import yaml

from tests.doc_pages import REPO_ROOT as REPO
from tests.doc_pages import bodies


def _blocks(lang):
    return bodies("augmentation.md", lang)


def test_python_examples_print_what_the_page_says():
    blocks = _blocks("python")
    assert len(blocks) >= 4, "the page lost its examples"
    result = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    printed = [line for line in result.stdout.splitlines() if line.strip()]
    # Every "print(...)   # expected" comment of the page, in order.
    expected = [c for b in blocks for c in re.findall(r"^print\(.*\)\s+# (.+)$", b, re.M)]
    assert len(expected) == 3 and printed[-len(expected) :] == expected


def test_yaml_example_is_a_loadable_pipeline(tmp_path):
    from libai.data.augmentation import load_pipeline

    (block,) = _blocks("yaml")
    assert "transforms" in yaml.safe_load(block)["pipeline"]
    (tmp_path / "my_aug.yaml").write_text(block)
    assert [type(t).__name__ for t in load_pipeline(str(tmp_path / "my_aug.yaml")).transforms] == [
        "Resize",
        "RandomFlip",
        "RandomColorJitter",
    ]
