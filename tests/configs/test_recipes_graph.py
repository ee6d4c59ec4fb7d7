"""Ready-to-launch recipes train a few iterations with ``--smoke`` in Graph mode: the check of
test_recipes.py (see its docstring), in a file of its own so that the suite's workers share the
recipes' Eager and Graph runs.

Every recipe trains in Eager in test_recipes.py, with its own settings. What Graph mode adds is
the compiled step of the recipe's model, so a Graph run is made for every recipe that ships
with Graph on, which users then run as shipped, and once for each other model class (its first
recipe by name). Recipes of one class differ in data, sizes and schedules, which the Eager runs
cover; a second compile of the same model class checked nothing new and cost 20-40 s of the
suite each.
"""
import os
import sys
from typing import List

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_recipes import RECIPES, _load, check_recipe_trains  # noqa: E402


def _model_class(cfg) -> str:
    target = cfg.model._target_
    return target if isinstance(target, str) else f"{target.__module__}.{target.__qualname__}"


# read only (each run loads its recipe afresh)
CONFIGS = {name: _load(name) for name in RECIPES}


def graph_recipes() -> List[str]:
    """Every recipe whose config enables Graph, and the first recipe (by name) of each model
    class that has none."""
    shipped = [name for name, cfg in CONFIGS.items() if cfg.graph.enabled]
    covered = {_model_class(CONFIGS[name]) for name in shipped}
    chosen = []
    for name, cfg in CONFIGS.items():
        model = _model_class(cfg)
        if name in shipped or model not in covered:
            chosen.append(name)
            covered.add(model)
    return chosen


GRAPH_RECIPES = graph_recipes()


def test_every_model_class_of_the_recipes_has_a_graph_run():
    assert {_model_class(CONFIGS[name]) for name in GRAPH_RECIPES} == \
        {_model_class(cfg) for cfg in CONFIGS.values()}
    shipped_graph = [name for name, cfg in CONFIGS.items() if cfg.graph.enabled]
    assert shipped_graph and set(shipped_graph) <= set(GRAPH_RECIPES)


@pytest.mark.parametrize("mode", ["graph"])
@pytest.mark.parametrize("name", GRAPH_RECIPES)
def test_recipe_trains_a_few_iterations_with_smoke_on_a_fresh_clone(name, mode, tmp_path, monkeypatch):
    check_recipe_trains(name, mode, tmp_path, monkeypatch)
