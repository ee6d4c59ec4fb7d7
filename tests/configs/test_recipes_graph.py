"""Every ready-to-launch recipe trains a few iterations at a shrunken size in Graph mode: the
check of test_recipes.py (see its docstring), in a file of its own so that the suite's workers
share the recipes' Eager and Graph runs."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_recipes import RECIPES, check_recipe_trains  # noqa: E402


@pytest.mark.parametrize("mode", ["graph"])
@pytest.mark.parametrize("name", RECIPES)
def test_recipe_trains_a_few_iterations_at_a_shrunken_size(name, mode, tiny_data, tmp_path):
    check_recipe_trains(name, mode, tiny_data, tmp_path)
