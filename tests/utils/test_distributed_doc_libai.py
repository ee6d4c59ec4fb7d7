"""The example of docs/distributed.md's section on LiBai's functions prints what the page says."""
import subprocess
import sys

from tests.doc_pages import bodies

SECTION = "## LiBai's `libai.utils.distributed` functions"


def test_the_libai_section_example_prints_the_quoted_output():
    code = bodies("distributed.md", "python", SECTION)[0]
    quoted = bodies("distributed.md", "text", SECTION)[0]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout == quoted
