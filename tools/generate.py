#!/usr/bin/env python
"""Generate text with a causal or encoder-decoder model.

    python tools/generate.py MODEL_DIR --prompt "..." [--max-new-tokens N] [--num-beams K] [--do-sample ...]
    python tools/generate.py MODEL_DIR --chat --prompt "..." [--system "..."]   # chat template, streamed

MODEL_DIR is a libai training output_dir (config.yaml + model_final/) or a Hugging Face model
directory. Everything happens in ``libai.inference.cli`` (see docs/generate_and_predict.md).
"""
import os
import sys

# Run from a checkout without installing: make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (makes OneFlow's libraries loadable; must precede oneflow)
from libai.inference.cli import generate_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(generate_main())
