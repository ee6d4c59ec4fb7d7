"""docs/config.md: its examples run as written, and print what the page says they print."""
import os

from tests.doc_pages import fenced_blocks


def test_doc_examples_run_from_the_project_folder(tmp_path, run_python):
    project = tmp_path / "project"
    project.mkdir()
    code = []
    for block in fenced_blocks("config.md"):
        if block.file:
            target = project / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body)
        elif block.lang == "python":
            code.append(block.body)
    assert len(code) >= 10, "the page lost its examples"
    result = run_python("\n".join(code), cwd=str(project))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "['model', 'train', 'optim', 'graph']" in out
    assert "32 Acc@1" in out
    assert "Did you mean train.train_iter? To add a new key on purpose, write '+train.train_itr=5'" in out
    assert "modeling.model.TinyNet" in out
    assert "model.hidden_size: 64 -> 256" in out and "train.train_iter: 1000 -> 50" in out
    assert "model = LazyCall('modeling.model.TinyNet')(hidden_size=256)" in out
    assert "cfg.optim = oneflow.nn.optimizer.adamw.AdamW(\n" in out
    assert "set 'train.evaluation.eval_period' instead" in out
    assert "Did you mean 'train.log_period'?" in out
    assert "did you mean 'model.hidden_size'?" in out
    assert "configs/broken.py', line 3: NameError" in out
    assert os.path.isfile(project / "output" / "config.yaml")
