"""Convert a class-per-folder image tree into OneFlow OFRecord part files.

    python tools/images_to_ofrecord.py --input-dir ./imagenet/train \
        --output-dir ./imagenet/ofrecord/train --num-parts 256 --shuffle

Each record holds the original encoded image file under ``encoded`` and its class index (classes
are the sorted sub-folder names) under ``class/label``; ``classes.txt`` lists the class names.
Read the result with ``libai.data.datasets.OFRecordImageDataset(root=OUTPUT_DIR)`` or with
OneFlow's ``flow.nn.OFRecordReader(OUTPUT_DIR, data_part_num=N, part_name_suffix_length=5)``.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (before any oneflow import)
from libai.data.datasets.imagefolder import IMAGE_EXTENSIONS  # noqa: E402
from libai.data.datasets.ofrecord import convert_image_folder_to_ofrecord  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--input-dir", required=True, help="folder with one sub-folder per class")
    parser.add_argument("--output-dir", required=True, help="empty folder for the part files")
    parser.add_argument("--num-parts", type=int, default=1, help="number of part files")
    parser.add_argument("--shuffle", action="store_true", help="permute samples before writing")
    parser.add_argument("--seed", type=int, default=0, help="seed of --shuffle")
    parser.add_argument(
        "--extensions", nargs="+", default=list(IMAGE_EXTENSIONS), help="image file extensions"
    )
    parser.add_argument("--verify", action="store_true", help="decode every image first")
    parser.add_argument(
        "--jpeg-quality", type=int, default=None,
        help="re-encode every image as JPEG of this quality (OneFlow's own image decoder reads "
        "JPEG only); by default the files are stored unchanged",
    )
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    summary = convert_image_folder_to_ofrecord(
        args.input_dir, args.output_dir, num_parts=args.num_parts, shuffle=args.shuffle,
        seed=args.seed, extensions=args.extensions, verify=args.verify,
        jpeg_quality=args.jpeg_quality,
    )
    print(
        f"wrote {summary['num_samples']} images of {len(summary['classes'])} classes into "
        f"{len(summary['parts'])} part file(s) under {args.output_dir}"
    )


if __name__ == "__main__":
    main()
