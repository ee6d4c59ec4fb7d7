"""The example of docs/distributed.md's section on LiBai's functions prints what the page says."""
import os
import re
import subprocess
import sys

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "docs", "distributed.md")
SECTION = "## LiBai's `libai.utils.distributed` functions"


def test_the_libai_section_example_prints_the_quoted_output():
    with open(DOC) as f:
        text = f.read()
    section = text[text.index(SECTION):]
    section = section[: section.index("\n## ", len(SECTION))]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    quoted = re.search(r"```text\n(.*?)```", section, flags=re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout == quoted
