"""The command line shared by every training script.

``tools/train_net.py`` and projects parse the same flags, so ``--help`` reads the same
everywhere. Multi-process and multi-node flags (``--nproc_per_node``, ``--nnodes``, ...) are not
here: they belong to ``python -m libai.launch`` (OneFlow's launcher's flags), which sets the environment each
process reads.
"""
import argparse
from typing import Any, Optional, Sequence

__all__ = ["default_argument_parser", "OverridesArgumentParser"]


class OverridesArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose flags may come before, between or after the overrides.

    People add ``--resume`` at the end of a long command line they already have
    (``... train.train_iter=100 --resume``); a parser that stops at the first override would
    read the flag as a malformed override. ``parse_args`` therefore parses intermixed
    arguments: every ``--flag`` is recognised wherever it is, and the ``key=value`` overrides
    keep their order.
    """

    def parse_args(  # type: ignore[override]
        self, args: Optional[Sequence[str]] = None, namespace: Any = None
    ) -> argparse.Namespace:
        return self.parse_intermixed_args(args, namespace)

_EXAMPLES = """\
examples:
  train on one process:
    python tools/train_net.py --config-file configs/my_config.py

  change settings without editing the file (keys must exist; '+key=value' adds a new one):
    python tools/train_net.py --config-file configs/my_config.py \\
        train.train_iter=2000 optim.lr=1e-4 train.amp.enabled=True "train.output_dir='./out'"

  check quickly that everything runs (a few iterations, frequent logging and evaluation):
    python tools/train_net.py --config-file configs/my_config.py --fast-dev-run

  a first try of a shipped recipe, shrunk to a tiny model and a few iterations:
    python tools/train_net.py --config-file configs/vit_imagenet.py --smoke

  continue from the last checkpoint in train.output_dir:
    python tools/train_net.py --config-file configs/my_config.py --resume

  evaluate weights only:
    python tools/train_net.py --config-file configs/my_config.py --eval-only \\
        train.load_weight=output/model_final

  plan a 1,024-GPU run before launching it (validation, placement, memory, time; no training):
    python tools/train_net.py --config-file configs/gpt3_175b_pretrain.py --dry-run \\
        --nodes 128 --devices-per-node 8 --device-memory 80GiB [--suggest]

  two processes on this machine:
    python -m libai.launch --nproc_per_node 2 tools/train_net.py \\
        --config-file configs/my_config.py
"""


def default_argument_parser(
    epilog: Optional[str] = None, require_config: bool = True
) -> argparse.ArgumentParser:
    """The parser of a training script: ``--config-file``, run modes, and trailing overrides.

    Args:
        epilog: text shown at the end of ``--help``; defaults to worked examples.
        require_config: whether ``--config-file`` must be given (true for training and
            evaluation; a script that can run without a config may turn it off).

    Returns:
        A parser whose result has ``config_file``, ``resume``, ``eval_only``, ``fast_dev_run``
        and ``opts`` (the list of ``key=value`` overrides, for ``LazyConfig.apply_overrides``),
        and the preflight flags (``dry_run``, ``suggest``, ``world_size``, ``nodes``,
        ``devices_per_node``, ``device*``, ...; read by ``libai.plan.cli``).
        Flags are recognised anywhere on the line, also after the overrides.
    """
    parser = OverridesArgumentParser(
        description="Train or evaluate a model described by a libai config file.",
        epilog=_EXAMPLES if epilog is None else epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config-file", required=require_config, default="" if not require_config else None,
        metavar="FILE", help="path to the config file (.py, .yaml or .json)",
    )
    parser.add_argument(
        "--resume", action="store_true",
        help="continue from the newest checkpoint in train.output_dir (the one named in "
        "its last_checkpoint file)",
    )
    parser.add_argument(
        "--eval-only", action="store_true",
        help="only evaluate the model (weights from train.load_weight or --resume)",
    )
    parser.add_argument(
        "--fast-dev-run", action="store_true",
        help="run a few iterations with frequent logging and evaluation, to check quickly "
        "that a config works end to end",
    )
    _add_preflight_arguments(parser)
    parser.add_argument(
        "--smoke", action="store_true",
        help="shrink the recipe to a run of seconds (tiny model, short sequences, small images and "
        "batches, 4 iterations, no loader workers) on the recipe's own data, to check that it "
        "works here before the real run (libai.engine.smoke)",
    )
    parser.add_argument(
        "opts", nargs="*", default=[], metavar="KEY=VALUE",
        help="config overrides applied after loading the file, e.g. train.train_iter=100 "
        "(values in hydra's override grammar, as in LiBai: lists [a,b], dicts {a: 1}, null; "
        "+key=v adds a key, ~key deletes one; docs/config.md); flags may come before or after them",
    )
    return parser


def _add_preflight_arguments(parser: argparse.ArgumentParser) -> None:
    """``--dry-run`` and the device figures it plans for (docs/preflight.md); libai.plan reads them."""
    group = parser.add_argument_group("preflight (plan without training; docs/preflight.md)")
    group.add_argument("--dry-run", action="store_true",
                       help="validate the config and print the placement, memory and time plan; "
                       "nothing is trained and no weights are allocated")
    group.add_argument("--suggest", action="store_true",
                       help="with --dry-run: rank the DP×TP×PP layouts that fit the devices")
    group.add_argument("--world-size", type=int, default=None, metavar="N",
                       help="devices to plan for (default: the launch's, else the config's sizes)")
    group.add_argument("--nodes", type=int, default=None, metavar="N", help="nodes to plan for")
    group.add_argument("--devices-per-node", type=int, default=None, metavar="M",
                       help="devices per node (default: min(world size, 8))")
    group.add_argument("--device", default=None, metavar="NAME",
                       help="device preset: v100, a10, a100-40gb, a100 (default, 80GB), h100")
    group.add_argument("--device-memory", default=None, metavar="SIZE", help="e.g. 80GiB")
    group.add_argument("--device-flops", default=None, metavar="RATE",
                       help="peak FLOP/s of the compute precision, e.g. 312T")
    group.add_argument("--link-bandwidth", default=None, metavar="RATE",
                       help="one-direction bandwidth between devices of a node, e.g. 300GB/s")
    group.add_argument("--inter-node-bandwidth", default=None, metavar="RATE",
                       help="per-device bandwidth between nodes, e.g. 25GB/s")
    group.add_argument("--seq-length", type=int, default=None, metavar="N",
                       help="tokens per sample to plan (default: the data's, else the training "
                       "dataset's max_seq_length, else the model's, at most 4096)")
    group.add_argument("--top", type=int, default=10, metavar="K", help="--suggest shows K layouts")
    group.add_argument("--plan-json", default=None, metavar="FILE", help="also write the plan as JSON")
    group.add_argument("--no-data-check", action="store_true",
                       help="do not read the datasets' first samples")
