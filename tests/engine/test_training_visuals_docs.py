"""docs/training_visuals.md shows what the code does: the summary table of the toy model, the
settings (every key a real default), the error for an unknown weight, the fallback note."""
import pytest

from libai.config import get_config
from libai.engine.default_trainer import DefaultTrainer
from libai.utils.model_graph import render_module_graph

from tests.doc_pages import bodies
from toy import ToyModel, toy_cfg


def _blocks(lang):
    return bodies("training_visuals.md", lang)


def test_the_summary_table_is_what_a_toy_run_writes(tmp_path):
    DefaultTrainer(toy_cfg(str(tmp_path), train_iter=1)).train()
    written = (tmp_path / "model-summary.txt").read_text()
    assert written in [block for block in _blocks("text")], written


def test_the_settings_block_names_real_defaults():
    (block,) = [b for b in _blocks("python") if "train.update" in b]

    class Recorder(dict):
        def update(self, values):
            self.values = values

    train = Recorder()
    exec(block, {"train": train})
    defaults = get_config("common/train.py").train
    assert set(train.values) == {"tensorboard", "live_plots", "model_summary"}
    for group, values in train.values.items():
        assert set(values) <= set(defaults[group]), (group, set(values) - set(defaults[group]))
        assert set(defaults[group]) <= set(values)  # the page shows every setting


def test_the_unknown_weight_message_is_the_one_raised(tmp_path):
    (shown,) = [line for b in _blocks("text") for line in b.splitlines() if line.startswith("ValueError")]
    trainer = DefaultTrainer(toy_cfg(str(tmp_path), live_plots=dict(enabled=True, weight="net.0.wieght")))
    with pytest.raises(ValueError) as raised:
        trainer.train()
    assert f"ValueError: {raised.value}".startswith(shown.rstrip(". "))


def test_the_fallback_note_is_the_one_printed(tmp_path):
    (shown,) = [line for b in _blocks("text") for line in b.splitlines() if line.startswith("note:")]
    result = render_module_graph(ToyModel(), str(tmp_path / "vit.svg"), dot_binary="/no/dot")
    assert f"note: {result.message}" == shown.replace("vit.txt", str(tmp_path / "vit.txt"))
