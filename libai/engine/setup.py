"""Run set-up: complete the config with defaults, prepare ``output_dir``, logging and seeds."""
import argparse
import logging
import os
import random
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np
import oneflow as flow
from omegaconf import DictConfig

from libai.config import (
    LazyConfig,
    check_required_fields,
    get_config,
    lift_model_ema,
    merge_with_defaults,
)
from libai.config.instantiate import TARGET_KEY
from libai.utils import distributed as dist
from libai.utils.launch_state import report_output_dir

__all__ = ["complete_config", "default_setup", "seed_all"]

logger = logging.getLogger(__name__)

REQUIRED_FIELDS = ("model", "train", "optim", "dataloader", "graph")


def complete_config(cfg: Any) -> Any:
    """Merge ``cfg.train`` (and ``cfg.graph``) over the built-in defaults, once.

    A partial nested dict (``train.update(dict(evaluation=dict(enabled=True)))``) keeps the
    missing defaults; each key the defaults do not know is reported once, with the nearest
    known key. ``main`` completes the config before applying the command-line overrides; the
    later entry points (``default_setup``, ``DefaultTrainer``) call this too, for scripts that
    start from a raw config, and find nothing to do: a config that already holds every default
    is returned as it is, unmerged. Each warning is given once per process
    (:func:`reset_warnings` forgets them, for tests).
    """
    check_required_fields(cfg, REQUIRED_FIELDS)
    lift_model_ema(cfg)  # a registry-style model.ema is the train.ema setting (EMAHook)
    defaults = get_config("common/train.py").train
    graph_defaults = get_config("common/models/graph.py").graph
    if _holds_every_default(cfg.train, defaults) and _holds_every_default(cfg.graph, graph_defaults):
        return cfg
    merged, unknown = merge_with_defaults(cfg.train, defaults, path="train")
    cfg.train = merged
    cfg.graph, unknown_graph = merge_with_defaults(cfg.graph, graph_defaults, path="graph")
    for message in list(unknown) + list(unknown_graph):
        if message not in _WARNED:
            _WARNED.add(message)
            logger.warning(message)
    return cfg


_WARNED: set = set()


def _holds_every_default(user: Any, default: Any) -> bool:
    """Whether ``user`` has every key of ``default``, in nested plain dicts too (what
    ``merge_with_defaults`` would add); nodes with ``_target_`` are taken whole, as there."""
    if not isinstance(user, (Mapping, DictConfig)):
        return False
    for key, value in default.items():
        if key not in user:
            return False
        if _is_plain_dict(value) and _is_plain_dict(user[key]) and not _holds_every_default(user[key], value):
            return False
    return True


def _is_plain_dict(value: Any) -> bool:
    return isinstance(value, (Mapping, DictConfig)) and TARGET_KEY not in value


def reset_warnings() -> None:
    """Forget which unknown-key warnings were given."""
    _WARNED.clear()


def seed_all(seed: int) -> None:
    """Seed Python, NumPy and OneFlow (every rank the same seed: parallel runs initialise the
    same weights as a one-process run and split them)."""
    random.seed(seed)
    np.random.seed(seed)
    flow.manual_seed(seed)


def _check_output_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, f".write-test-{os.getpid()}")
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as e:
        raise PermissionError(
            f"train.output_dir {path!r} is not writable ({e.strerror}); choose another with "
            "train.output_dir=/a/writable/dir"
        ) from e


def default_setup(cfg: Any, args: Optional[argparse.Namespace] = None) -> None:
    """Prepare a run: complete the config, create ``output_dir`` (a clear error if it is not
    writable), set up logging (console on rank 0, ``log.txt``), log the environment, the
    command line and what the config changes against the defaults, save ``config.yaml``
    (reloadable with ``LazyConfig.load``), and seed every RNG with ``train.seed``."""
    from libai.utils.logger import collect_env_info, setup_logger

    cfg = complete_config(cfg)
    output_dir = cfg.train.output_dir
    rank = dist.get_rank()
    if dist.is_main_process():
        _check_output_dir(output_dir)
        report_output_dir(output_dir)  # to python -m libai.launch, for its restarts
    dist.synchronize()
    setup_logger(output_dir, distributed_rank=rank)
    logger.info(f"Rank {rank} of {dist.get_world_size()}")
    logger.info("Environment:\n" + collect_env_info())
    if args is not None:
        logger.info(f"Command line arguments: {vars(args)}")
        if getattr(args, "config_file", None):
            logger.info(f"Config file: {args.config_file}")
    _log_changes_against_defaults(cfg)
    if dist.is_main_process():
        path = os.path.join(output_dir, "config.yaml")
        LazyConfig.save(cfg, path)
        logger.info(f"Full config saved to {path}")
    seed_all(int(cfg.train.seed))


def _log_changes_against_defaults(cfg: Any) -> None:
    defaults = get_config("common/train.py").train
    changes = LazyConfig.diff(defaults, cfg.train)
    if changes:
        lines = "\n".join(f"  {c}" if str(c).startswith("train.") else f"  train.{c}" for c in changes)
        logger.info(f"train settings that differ from the defaults:\n{lines}")
