"""Every ready-to-launch recipe in ``configs/`` (and ``configs/examples/``) loads at full size and
trains a few iterations at a shrunken size, in Eager mode here and in Graph mode in
test_recipes_graph.py (both through :func:`check_recipe_trains`), in the test process.

The shrinking is ``--smoke`` (:func:`libai.engine.smoke.apply_smoke`), what a user runs for a
first try. A recipe joins automatically by existing; its data overrides come from
recipe_overrides.py, and a recipe without an entry fails here with a message saying where to add
one. The recipes' data placeholders are pointed at tiny data built once per session (tiny_data.py).
"""
import glob
import inspect
import json
import math
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from recipe_overrides import RECIPE_OVERRIDES  # noqa: E402

from libai.config import LazyConfig  # noqa: E402
from libai.config.targets import locate as locate_target  # noqa: E402
from libai.engine import DefaultTrainer  # noqa: E402
from libai.engine.setup import complete_config  # noqa: E402
from libai.engine.smoke import apply_smoke  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
CONFIGS = os.path.join(REPO, "configs")
TRAIN_ITERS = 2
REQUIRED = ("model", "train", "optim", "dataloader", "graph")


def _recipe_names():
    paths = glob.glob(os.path.join(CONFIGS, "*.py")) + glob.glob(os.path.join(CONFIGS, "examples", "*.py"))
    return sorted(os.path.relpath(p, CONFIGS)[: -len(".py")] for p in paths)


RECIPES = _recipe_names()


def _load(name):
    return LazyConfig.load(os.path.join(CONFIGS, name + ".py"))


def _overrides_of(name):
    if name not in RECIPE_OVERRIDES:
        pytest.fail(
            f"configs/{name}.py has no shrink overrides: add an entry {name!r}: [...] to "
            f"tests/configs/recipe_overrides.py (override strings that make the model, images or "
            f"sequences and batches tiny, and point its data placeholders at the harness's tiny "
            f"data, e.g. '{{bert_prefix}}'; see that file's docstring)",
            pytrace=False,
        )
    return list(RECIPE_OVERRIDES[name])


def _harness_overrides(output_dir, graph_enabled):
    return [f"train.output_dir='{output_dir}'", f"graph.enabled={graph_enabled}"]


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
    _overrides_of(name)  # a recipe without shrink overrides is an error on its own
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


def check_recipe_trains(name, mode, tiny_data, tmp_path):
    """The recipe, shrunk by ``--smoke`` and pointed at the tiny data, trains TRAIN_ITERS
    iterations in ``mode`` (``"eager"`` or ``"graph"``) with finite losses, evaluates when it
    has evaluation on, and writes its final checkpoint."""
    try:
        overrides = [item.format(**tiny_data) for item in _overrides_of(name)]
    except KeyError as error:
        pytest.fail(f"recipe_overrides.py entry {name!r} names the placeholder {{{error.args[0]}}}, "
                    f"which the harness does not build; known: {sorted(tiny_data)}", pytrace=False)
    cfg = complete_config(_load(name))  # as the command line loads it
    output_dir = str(tmp_path / "out")
    apply_smoke(cfg, iterations=TRAIN_ITERS)  # what --smoke does, before the overrides
    LazyConfig.apply_overrides(cfg, overrides + _harness_overrides(output_dir, mode == "graph"))
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
def test_recipe_trains_a_few_iterations_at_a_shrunken_size(name, mode, tiny_data, tmp_path):
    check_recipe_trains(name, mode, tiny_data, tmp_path)
