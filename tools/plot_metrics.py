"""Plot the curves of a training run from its metrics.json.

    python tools/plot_metrics.py output/mnist                  # a run's output directory
    python tools/plot_metrics.py --input output/mnist/metrics.json --output-dir output/plots

writes losses.png, lr.png, timing.png and eval.png (each only when the file has such values),
by default into a ``plots`` folder next to the metrics.json.
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

from libai.utils.plot import metrics_file, plot_metrics  # noqa: E402

DEFAULT_INPUT = "output/metrics.json"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Draw PNG curves (losses, lr, timing, evaluation metrics) from metrics.json."
    )
    parser.add_argument(
        "run", nargs="?", default=None,
        help="a run's output directory (train.output_dir), or its metrics.json",
    )
    parser.add_argument(
        "--input", default=None,
        help=f"the metrics.json of a run, instead of RUN (default: {DEFAULT_INPUT})",
    )
    parser.add_argument(
        "--output-dir", default=None,
        help="where to write the PNGs (default: a 'plots' folder next to the input)",
    )
    parser.add_argument("--dpi", type=int, default=100, help="image resolution (default: 100)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if args.run is not None and args.input is not None:
        print(f"error: give the run ({args.run}) or --input ({args.input}), not both", file=sys.stderr)
        return 2
    try:
        path = metrics_file(args.run or args.input or DEFAULT_INPUT)
        output_dir = args.output_dir
        if output_dir is None:
            output_dir = os.path.join(os.path.dirname(os.path.abspath(path)), "plots")
        paths = plot_metrics(path, output_dir, dpi=args.dpi)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for png in paths:
        print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
