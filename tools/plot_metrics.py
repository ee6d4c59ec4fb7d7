"""Plot the curves of a training run from its metrics.json.

    python tools/plot_metrics.py --input output/metrics.json --output-dir output/plots

writes losses.png, lr.png, timing.png and eval.png (each only when the file has such values).
The logic lives in :mod:`libai.utils.plot`.
"""
import argparse
import os
import sys
from typing import List, Optional

try:
    import libai  # noqa: F401
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from libai.utils.plot import plot_metrics  # noqa: E402


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Draw PNG curves (losses, lr, timing, evaluation metrics) from metrics.json."
    )
    parser.add_argument(
        "--input", default="output/metrics.json",
        help="the metrics.json of a run (default: %(default)s)",
    )
    parser.add_argument(
        "--output-dir", default=None,
        help="where to write the PNGs (default: a 'plots' folder next to the input)",
    )
    parser.add_argument("--dpi", type=int, default=100, help="image resolution (default: 100)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    output_dir = args.output_dir
    if output_dir is None:
        output_dir = os.path.join(os.path.dirname(os.path.abspath(args.input)), "plots")
    try:
        paths = plot_metrics(args.input, output_dir, dpi=args.dpi)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
