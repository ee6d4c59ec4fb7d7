"""Write scikit-learn's bundled handwritten digits as MNIST IDX files, for offline MNIST runs.

    python tools/make_digits_mnist.py --output-dir ./dataset/mnist

writes ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte`` and
``t10k-labels-idx1-ubyte`` (1,797 real 8×8 digits upscaled to 28×28, split deterministically),
which ``libai.data.datasets.MNISTDataset(root=...)`` reads like the real MNIST files.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (before any oneflow import)
from libai.data.datasets.mnist_files import make_digits_mnist  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", required=True, help="folder to write the four files into")
    parser.add_argument("--size", type=int, default=28, help="image side in pixels (>= 8)")
    parser.add_argument(
        "--test-fraction", type=float, default=0.2, help="share of samples in the t10k split"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the train/test split")
    parser.add_argument("--gzip", action="store_true", help="write .gz files, like the MNIST site")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    written = make_digits_mnist(
        args.output_dir, size=args.size, test_fraction=args.test_fraction, seed=args.seed,
        compress=args.gzip,
    )
    for split, paths in written.items():
        for path in paths:
            print(f"{split:5s} {path}")


if __name__ == "__main__":
    main()
