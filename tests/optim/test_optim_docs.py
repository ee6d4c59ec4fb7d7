"""The worked examples of docs/optim_and_schedulers.md run and print what the page says."""
from tests.doc_pages import bodies, doc_path

DOC = doc_path("optim_and_schedulers.md")


def _python_blocks():
    return bodies("optim_and_schedulers.md", "python")


def test_examples_run_and_print_the_documented_values(capsys):
    blocks = [b for b in _python_blocks() if "set_graph_schedule_step(graph," not in b]
    assert len(blocks) == 4
    for block in blocks:
        exec(compile(block, DOC, "exec"), {"__name__": "docs_example"})
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "1 {'weight_decay': 0.0, 'lr': 0.001}",
        "1 {'weight_decay': 0.05}",
        "3 {'weight_decay': 0.0}",
        "[0.001, 0.04929, 0.09758, 0.0796, 0.04276, 0.00102]",
    ]
