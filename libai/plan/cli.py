"""``tools/train_net.py --dry-run [--suggest]``: print the plan, exit non-zero on problems.

Exit status: 0 when the plan has no errors and every rank fits, 1 when validation found errors
(all of them are printed), 2 when the run is valid but a rank does not fit in the device memory.
"""
import argparse
import json
import sys
from typing import Any, Optional, TextIO

from libai.plan.core import MEMORY_HEADROOM, Plan, plan
from libai.plan.report import format_suggestions
from libai.plan.search import suggest

__all__ = ["plan_from_args", "run_dry_run"]


def plan_from_args(args: argparse.Namespace) -> Plan:
    """The plan the command line asks for (the same call as ``libai.plan(cfg, ...)``)."""
    from libai.config import LazyConfig

    cfg = LazyConfig.load(args.config_file)
    return plan(
        cfg, world_size=args.world_size, nodes=args.nodes, devices_per_node=args.devices_per_node,
        device=args.device, device_memory=args.device_memory, device_flops=args.device_flops,
        link_bandwidth=args.link_bandwidth, inter_node_bandwidth=args.inter_node_bandwidth,
        check_data=not args.no_data_check, overrides=list(args.opts or []),
        seq_length=getattr(args, "seq_length", None),
    )


def run_dry_run(args: argparse.Namespace, out: Optional[TextIO] = None) -> int:
    """Plan, print, optionally rank layouts and write JSON; return the exit status."""
    out = out or sys.stdout
    result = plan_from_args(args)
    print(result.format(), file=out)
    summary: Any = result.as_dict()
    if args.suggest and result.run is not None and result.model is not None and result.time is None:
        print("\n-- no layouts ranked: they are ranked by step time, and this model has no time "
              "plan (see the warnings)", file=out)
    elif args.suggest and result.run is not None and result.model is not None:
        ranked = suggest(result.model, result.costs, result.run, result.device, result.world_size,
                         MEMORY_HEADROOM, top=args.top)
        print("\n" + format_suggestions(ranked, result.device.memory * MEMORY_HEADROOM), file=out)
        summary["suggestions"] = [dict(layout=c.run.describe(), peak_bytes=c.peak_bytes, fits=c.fits,
                                       step_seconds=c.time.step_seconds) for c in ranked]
    if args.plan_json:
        with open(args.plan_json, "w") as f:
            json.dump(summary, f, indent=1)
    if result.errors:
        print(f"\npreflight: {len(result.errors)} error(s), see above", file=out)
        return 1
    if result.fits is False:
        print("\npreflight: the run does not fit in the device memory, see above", file=out)
        return 2
    return 0
