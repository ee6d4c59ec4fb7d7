"""Every ready-to-launch recipe in ``configs/`` (and ``configs/examples/``) loads at full size and
trains a few iterations with ``--smoke`` on a fresh clone, in Eager mode here and in Graph mode
in test_recipes_graph.py (both through :func:`check_recipe_trains`), in the test process.

``--smoke`` is what a user runs for a first try (README.md): the command line's
:func:`~libai.engine.cli.load_config` shrinks the recipe (:mod:`libai.engine.smoke`) and, for
every vocabulary, corpus and image folder the recipe names that is not there, makes a tiny
synthetic stand-in of the same format (:mod:`libai.engine.smoke_data`). Each recipe runs from an
empty folder, so none of its placeholder paths exists, with no data override at all: what is
checked is exactly what a fresh clone does. A recipe joins automatically by existing.
"""
import glob
import inspect
import json
import logging
import math
import os

import pytest

from libai.config import LazyConfig, default_argument_parser
from libai.config.targets import locate as locate_target
from libai.data.data_utils.indexed_dataset import data_file_path
from libai.engine import DefaultTrainer
from libai.engine.cli import load_config

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CONFIGS = os.path.join(REPO, "configs")
TRAIN_ITERS = 2
REQUIRED = ("model", "train", "optim", "dataloader", "graph")
# the keys naming a file or folder a recipe reads
DATA_KEYS = ("vocab_file", "merges_file", "data_prefix", "data_file", "root", "source", "pretrained_model_name_or_path")


def _recipe_names():
    paths = glob.glob(os.path.join(CONFIGS, "*.py")) + glob.glob(os.path.join(CONFIGS, "examples", "*.py"))
    return sorted(os.path.relpath(p, CONFIGS)[: -len(".py")] for p in paths)


RECIPES = _recipe_names()


def _load(name):
    return LazyConfig.load(os.path.join(CONFIGS, name + ".py"))


def _node_paths(node, path):
    """Every LazyCall node under ``node`` with its dotted path (lists and dicts included)."""
    if hasattr(node, "keys"):
        if "_target_" in node:
            yield path, node
        for key in node.keys():
            yield from _node_paths(node[key], f"{path}.{key}" if path else str(key))
    elif isinstance(node, (list, tuple)) or type(node).__name__ == "ListConfig":
        for i, item in enumerate(node):
            yield from _node_paths(item, f"{path}.{i}")


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_loads_at_full_size_and_every_node_binds_without_building(name):
    cfg = _load(name)
    missing = [field for field in REQUIRED if field not in cfg]
    assert not missing, f"configs/{name}.py lacks the top-level field(s) {missing}"
    checked = 0
    for path, node in _node_paths(cfg, ""):
        target = locate_target(node["_target_"]) if isinstance(node["_target_"], str) else node["_target_"]
        if not callable(target) or hasattr(target, "keys"):
            continue
        arguments = {k: node[k] for k in node.keys() if k not in ("_target_", "_recursive_")}
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):  # a builtin without a signature: nothing to check
            continue
        try:
            signature.bind_partial(**arguments)
        except TypeError as error:
            pytest.fail(f"configs/{name}.py: node '{path}' ({target}) does not accept its arguments: {error}")
        checked += 1
    assert checked >= 3  # at least the model, the optimizer and the loaders


def _train(cfg):
    trainer = DefaultTrainer(cfg)
    trainer.resume_or_load(resume=False)  # as tools/train_net.py does
    trainer.train()
    return trainer


def _metrics(output_dir):
    with open(os.path.join(output_dir, "metrics.json"), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _data_paths(cfg):
    """``{key path: value}`` of every file or folder the config's tokenizers and datasets read."""
    found = {}
    for section in ("tokenization", "dataloader"):
        for path, node in _node_paths(cfg.get(section, None), section):
            for key in DATA_KEYS:
                if key in node and isinstance(node[key], str):
                    found[f"{path}.{key}"] = node[key]
    return found


def _exists(key, value):
    return os.path.exists(data_file_path(value) if key.endswith("data_prefix") else value)


class _Lines(logging.Handler):
    """The messages of one logger (on the logger itself: libai's may not propagate to pytest's)."""

    def __init__(self, name):
        super().__init__(logging.INFO)
        self.logger, self.lines = logging.getLogger(name), []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def __enter__(self):
        self.level = self.logger.level
        self.logger.setLevel(logging.INFO)
        self.logger.addHandler(self)
        return self.lines

    def __exit__(self, *exc):
        self.logger.removeHandler(self)
        self.logger.setLevel(self.level)


def check_recipe_trains(name, mode, tmp_path, monkeypatch):
    """``tools/train_net.py --config-file configs/<name>.py --smoke`` as run on a fresh clone
    (from an empty folder: none of the recipe's data paths exist), in ``mode`` (``"eager"`` or
    ``"graph"``): every file or folder the recipe reads is there afterwards (a stand-in, named in
    the one log line), and it trains TRAIN_ITERS iterations with finite losses, evaluates when
    it has evaluation on, and writes its final checkpoint."""
    monkeypatch.chdir(tmp_path)
    output_dir = str(tmp_path / "out")
    missing = {k: v for k, v in _data_paths(_load(name)).items() if not _exists(k, v)}
    args = default_argument_parser().parse_args([
        "--config-file", os.path.join(CONFIGS, name + ".py"), "--smoke", f"train.train_iter={TRAIN_ITERS}",
        f"train.output_dir='{output_dir}'", f"graph.enabled={mode == 'graph'}"])
    with _Lines("libai.engine.smoke_data") as said:
        cfg = load_config(args)
    paths = _data_paths(cfg)
    assert all(_exists(k, v) for k, v in paths.items()), paths
    if missing:  # one line naming every missing path and the folder of the stand-ins
        assert len(said) == 1 and "stand-ins of the same format were made in" in said[0], said
        assert all(repr(value) in said[0] for value in missing.values()), (missing, said)
        assert all(paths[key] != value for key, value in missing.items())
    else:
        assert not said
    assert all(loader.num_workers == 0 for loader in [cfg.dataloader.train, *cfg.dataloader.get("test", [])]
               if "num_workers" in loader)
    trainer = _train(cfg)
    assert (trainer.graph_train is not None) == (mode == "graph")
    lines = _metrics(output_dir)
    losses = [line["total_loss"] for line in lines if "total_loss" in line]
    assert len(losses) == TRAIN_ITERS and all(math.isfinite(v) for v in losses), lines
    if cfg.train.evaluation.enabled and cfg.dataloader.get("test", None):
        metric = cfg.train.evaluation.eval_metric
        evaluated = [line for line in lines if metric in line]
        assert evaluated and math.isfinite(evaluated[-1][metric]), lines
    assert os.path.isdir(os.path.join(output_dir, "model_final"))


# Graph mode (a compiled training and evaluation graph per recipe) runs from
# test_recipes_graph.py: a file of its own, so that a second test worker takes it.
@pytest.mark.parametrize("mode", ["eager"])
@pytest.mark.parametrize("name", RECIPES)
def test_recipe_trains_a_few_iterations_with_smoke_on_a_fresh_clone(name, mode, tmp_path, monkeypatch):
    check_recipe_trains(name, mode, tmp_path, monkeypatch)
