#!/usr/bin/env python
"""Draw the module graph of a config's model (one box per module: name, type, parameters).

    python tools/visualize_model.py --config-file CFG --output model.svg [key=value ...]
    python tools/visualize_model.py --config-file CFG --output model.png --max-depth 2

The drawing needs Graphviz's ``dot`` program (Debian: ``apt-get install graphviz``). Without
it the module tree is written as text next to the requested file (``model.txt``) and a note on
stderr says so. The model is built as training builds it (same layout), no weights are loaded
and no data is read. The logic lives in :mod:`libai.utils.model_graph`.
"""
import argparse
import os
import sys
from typing import List, Optional

# Run from a checkout without installing: make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (makes OneFlow's libraries loadable; must precede oneflow)
from libai.engine.cli import load_config  # noqa: E402
from libai.engine.default_trainer import DefaultTrainer  # noqa: E402
from libai.layers import skip_weight_init  # noqa: E402
from libai.utils.model_graph import render_module_graph  # noqa: E402


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config-file", required=True, help="a training config (.py or .yaml)")
    parser.add_argument("--output", required=True, help="the file to write: .svg or .png")
    parser.add_argument("--max-depth", type=int, default=None,
                        help="draw modules down to this nesting depth (default: all)")
    parser.add_argument("opts", nargs=argparse.REMAINDER, help="config overrides, key=value")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if not args.output.lower().endswith((".svg", ".png")):
        print(f"error: --output must end in .svg or .png, got {args.output!r}", file=sys.stderr)
        return 2
    cfg = load_config(args)
    layout = DefaultTrainer.build_layout(cfg)
    with layout, skip_weight_init():  # the drawing needs the structure, not drawn weights
        model = DefaultTrainer.build_model(cfg)
    result = render_module_graph(model, args.output, max_depth=args.max_depth)
    if result.fallback:
        print(f"note: {result.message}", file=sys.stderr)
    print(result.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
