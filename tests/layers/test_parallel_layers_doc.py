"""The Python examples of docs/parallel_layers.md run as written (in one process)."""
import sys

import pytest

from tests.doc_pages import bodies, doc_path

DOC = doc_path("parallel_layers.md")


def _python_blocks():
    return bodies("parallel_layers.md", "python")


def test_doc_has_examples():
    assert len(_python_blocks()) == 4


@pytest.mark.parametrize("index", range(4))
def test_doc_example_runs(index, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["tiny_lm.py"])  # the worked example reads sizes from argv
    code = _python_blocks()[index]
    exec(compile(code, f"{DOC}:example{index}", "exec"), {"__name__": "__doc_example__"})
    out = capsys.readouterr().out
    if "class TinyLM" in code:
        # the numbers the page quotes for every layout
        assert "1 process(es): loss 4.429295, embedding grad norm 1.462794" in out
    if "GPTForPreTraining(cfg)" in code:
        assert "lm_loss" in out
    if "skip_weight_init" in code:
        assert "BERT-large: 336,226,108 parameters" in out
    if "layer.layout is layout" in code:
        assert "True 0" in out and "oneflow.Size([2, 4])" in out
