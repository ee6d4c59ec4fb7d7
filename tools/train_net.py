#!/usr/bin/env python
"""Train or evaluate a model described by a libai config file.

    python tools/train_net.py --config-file CFG [--resume] [--eval-only] [key=value ...]
    python -m libai.launch --nproc_per_node N tools/train_net.py --config-file CFG

Everything happens in ``libai.engine.cli`` (``main``; ``launch_main`` adds the exit status);
projects call the same functions. A run that fails (e.g. stopped by the NaN check) exits with
status 1 and its reason as the last lines.
"""
import os
import sys

# Run from a checkout without installing: make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (makes OneFlow's libraries loadable; must precede oneflow)
from libai.engine.cli import launch_main  # noqa: E402

if __name__ == "__main__":
    launch_main()
