"""The worked examples of docs/evaluation.md run and give the documented result."""
from tests.doc_pages import bodies, doc_path

DOC = doc_path("evaluation.md")


def test_examples_run_and_print_the_documented_result(capsys):
    blocks = bodies("evaluation.md", "python")
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, DOC, "exec"), {"__name__": "docs_example"})
    assert capsys.readouterr().out.splitlines() == ["OrderedDict([('MAE', 0.2)])"]
