"""What the recipe tests (test_recipes.py, test_recipes_graph.py) share: the tiny data."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_data import build_tiny_data  # noqa: E402


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    """The tiny data sets the recipes' placeholders point at (tiny_data.py), once per module."""
    return build_tiny_data(str(tmp_path_factory.mktemp("recipe_data")))
