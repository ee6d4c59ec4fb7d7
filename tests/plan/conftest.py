"""Shared piece of the preflight tests: a small valid config."""
import os

import pytest

TINY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "configs", "examples", "gpt_tiny_synthetic.py")


@pytest.fixture
def tiny_cfg():
    """The synthetic tiny GPT (its data needs no files, so sample checks run)."""
    from libai.config import LazyConfig

    return LazyConfig.load(TINY)
