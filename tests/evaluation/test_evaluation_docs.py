"""The worked examples of docs/evaluation.md run and give the documented result."""
import os
import re

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "evaluation.md")


def test_examples_run_and_print_the_documented_result(capsys):
    with open(DOC) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, DOC, "exec"), {"__name__": "docs_example"})
    assert capsys.readouterr().out.splitlines() == ["OrderedDict([('MAE', 0.2)])"]
