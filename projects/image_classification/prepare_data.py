#!/usr/bin/env python
"""Write scikit-learn's bundled handwritten digits as a class-per-folder image tree.

scikit-learn ships 1,797 real 8×8 grey-level scans of handwritten digits (the UCI "optical
recognition of handwritten digits" test set) inside the package, so nothing is downloaded. This
script upsamples each one to 32×32, saves it as an RGB PNG and lays the files out the way
``ImageFolderDataset`` (and ImageNet) expects:

    OUTPUT/train/<digit>/<index>.png     (80% of each class)
    OUTPUT/val/<digit>/<index>.png       (the other 20%)

    python projects/image_classification/prepare_data.py --output-dir data/digits_folder
"""
import argparse
import os
from typing import Dict

import numpy as np
from PIL import Image


def write_digit_folders(output_dir: str, size: int = 32, val_fraction: float = 0.2,
                        seed: int = 0, limit: int = 0) -> Dict[str, int]:
    """Write the tree; return the number of images per split. ``limit`` > 0 keeps only that
    many images per class (for quick tests)."""
    from sklearn.datasets import load_digits  # the data ship inside scikit-learn

    digits = load_digits()
    rng = np.random.default_rng(seed)
    counts = {"train": 0, "val": 0}
    for label in range(10):
        indices = np.flatnonzero(digits.target == label)
        rng.shuffle(indices)
        if limit > 0:
            indices = indices[:limit]
        n_val = max(1, int(round(len(indices) * val_fraction)))
        for split, part in (("val", indices[:n_val]), ("train", indices[n_val:])):
            folder = os.path.join(output_dir, split, str(label))
            os.makedirs(folder, exist_ok=True)
            for index in part:
                grey = (digits.images[index] * (255.0 / 16.0)).astype(np.uint8)  # values 0..16
                image = Image.fromarray(grey, mode="L").resize((size, size), Image.BILINEAR)
                image.convert("RGB").save(os.path.join(folder, f"{index:04d}.png"))
                counts[split] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default="data/digits_folder")
    parser.add_argument("--size", type=int, default=32, help="side of the written images")
    parser.add_argument("--limit", type=int, default=0, help="images per class (0 = all)")
    args = parser.parse_args()
    counts = write_digit_folders(args.output_dir, args.size, limit=args.limit)
    print(f"wrote {counts['train']} training and {counts['val']} validation images under {args.output_dir}")


if __name__ == "__main__":
    main()
