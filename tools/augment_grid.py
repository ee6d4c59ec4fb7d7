#!/usr/bin/env python
"""Write a PNG grid of augmented versions of one image: a visual check of a pipeline.

    python tools/augment_grid.py --sample china.jpg --pipeline flip_resize_jitter --n 16 --seed 0 --output grid.png
    python tools/augment_grid.py --image photo.jpg --pipeline my_aug.yaml --output grid.png

``--pipeline`` is a preset (see ``--list``) or a config file that defines ``pipeline`` or
``transforms`` (see docs/augmentation.md). ``--sample`` takes an image shipped with
scikit-learn (``china.jpg``, ``flower.jpg``), so no file or download is needed. All the work
is in ``libai.data.augmentation.grid``.
"""

import argparse
import os
import sys

# Run from a checkout without installing: make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (makes OneFlow's libraries loadable; must precede oneflow)
from libai.data.augmentation import PRESETS, augment_grid, load_pipeline, save_png  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--image", help="path of the image to augment")
    source.add_argument(
        "--sample", default=None, help="an image shipped with scikit-learn: china.jpg or flower.jpg"
    )
    parser.add_argument(
        "--pipeline", default="flip_resize_jitter", help="preset name or config file (.py/.yaml)"
    )
    parser.add_argument("--n", type=int, default=16, help="number of augmented samples")
    parser.add_argument("--ncol", type=int, default=None, help="columns (default: about square)")
    parser.add_argument(
        "--seed", type=int, default=0, help="pipeline seed; sample i uses seed (seed, i)"
    )
    parser.add_argument("--output", default="augment_grid.png", help="PNG file to write")
    parser.add_argument("--list", action="store_true", help="print the presets and exit")
    return parser.parse_args(argv)


def load_image(args: argparse.Namespace):
    """The RGB image to augment, as a uint8 array."""
    import numpy as np
    from PIL import Image

    if args.image:
        with Image.open(args.image) as image:
            return np.asarray(image.convert("RGB"))
    from sklearn.datasets import load_sample_image

    return load_sample_image(args.sample or "china.jpg")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list:
        print("\n".join(sorted(PRESETS)))
        return 0
    pipeline = load_pipeline(args.pipeline, seed=args.seed)
    grid = augment_grid(load_image(args), pipeline, n=args.n, ncol=args.ncol)
    save_png(grid, args.output)
    print(
        f"wrote {args.output} ({grid.shape[1]}x{grid.shape[0]}, {args.n} samples of {args.pipeline})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
