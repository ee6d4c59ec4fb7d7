"""Convert a libai checkpoint into upstream LiBai's layout, so a LiBai run can load or resume it.

    python tools/convert_checkpoint.py --to libai-upstream output/run/model_0000999 libai_output/
    python tools/convert_checkpoint.py --to libai-upstream output/run libai_output/   # its newest

writes ``libai_output/model_0000999/{model,optimizer,graph,lr_scheduler}`` and
``libai_output/last_checkpoint``: LiBai's ``train.load_weight=libai_output/model_0000999`` loads
the weights, and ``--resume`` with ``train.output_dir=libai_output`` continues from iteration 1000
(eager or graph mode). The other way needs no conversion: libai loads LiBai's checkpoints as
they are (see docs/migrating_from_libai.md, "Checkpoints"). The logic lives in
:mod:`libai.utils.checkpoint_convert`.
"""
import argparse
import logging
import os
import sys
from typing import List, Optional

try:
    import libai  # noqa: F401
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from libai.utils.checkpoint_convert import export_to_libai_upstream  # noqa: E402
from libai.utils.checkpoint_files import CheckpointError  # noqa: E402

TARGETS = ("libai-upstream",)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Write a libai checkpoint in the layout upstream LiBai's Checkpointer reads.")
    parser.add_argument("--to", required=True, choices=TARGETS,
                        help="target layout: libai-upstream = LiBai's Checkpointer")
    parser.add_argument("src", help="a libai checkpoint directory, or a run's output_dir (its "
                        "last_checkpoint is converted)")
    parser.add_argument("dst", help="the LiBai output_dir to write into (created if missing)")
    parser.add_argument("--name", default=None,
                        help="checkpoint name (default model_<iteration:07d>; LiBai reads the "
                        "iteration from the name)")
    parser.add_argument("--model-class", default=None,
                        help="model class (e.g. GPTForPreTraining) for checkpoints whose manifest "
                        "does not record it")
    parser.add_argument("--no-tag", action="store_true",
                        help="do not write dst/last_checkpoint")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        path = export_to_libai_upstream(args.src, args.dst, name=args.name,
                                        model_class=args.model_class,
                                        tag_last_checkpoint=not args.no_tag)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
