"""The recipe tests (test_recipes.py, test_recipes_graph.py) import each other by file name."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
