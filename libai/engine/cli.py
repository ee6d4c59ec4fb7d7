"""The command-line program: ``tools/train_net.py`` and every project's entry point.

``main(args)`` loads the config, completes it with the defaults, applies the command-line
overrides, sets the run up and trains (``--resume`` continues from the newest checkpoint) or
evaluates (``--eval-only``). The order matters: defaults come *before* overrides, so a config
that wrote a partial nested dict (``train.update(dict(evaluation=dict(enabled=True)))``) still
accepts an override of a key it left out (``train.evaluation.eval_period=2``), and every later
step sees the completed config; it is completed once per start.

:func:`launch_main` adds what a process needs around ``main``: a run that failed
(:class:`~libai.engine.default_trainer.TrainingFailed`, e.g. a NaN loss) ends with its reason as
the last lines and exit status 1, a user's mistake (a missing file, a bad key or value:
:mod:`libai.engine.user_errors` decides) with its message once and no traceback
(``LIBAI_FULL_ERROR=1`` shows it), and in a multi-process run a rank that raised ends at once
instead of leaving its peers waiting.
"""
import argparse
import contextlib
import logging
import os
import sys
import traceback
from typing import Any, Callable, Iterator, List, Mapping, Optional, Sequence, Type

import oneflow as flow

from libai.config import LazyConfig, default_argument_parser
from libai.engine.default_trainer import DefaultTrainer, TrainingFailed
from libai.engine.hooks.input_check import install_input_checks
from libai.engine.hooks.preemption import catch_stop_signals
from libai.engine.setup import complete_config, default_setup
from libai.engine.smoke import apply_smoke
from libai.engine.smoke_data import make_stand_ins
from libai.engine.user_errors import user_error_message
from libai.utils import distributed as dist
from libai.utils.checkpoint import Checkpointer
from libai.utils.run_lock import hold_output_dir
from libai.utils.weight_readers import load_weight

__all__ = ["evaluate_only", "exit_now_on_failure", "exit_with_user_error", "launch_main", "load_config", "main"]

logger = logging.getLogger(__name__)


def load_config(args: argparse.Namespace) -> Any:
    """The run's config: the file, completed with the defaults, then the ``key=value``
    overrides (strict: an unknown key is refused with the nearest known one), then
    ``--fast-dev-run``. ``--smoke`` (:func:`libai.engine.smoke.apply_smoke`: a tiny model and a
    few iterations) applies before the overrides, so that what the command line sets wins."""
    _check_config_file(args.config_file)
    cfg = complete_config(LazyConfig.load(args.config_file))
    if getattr(args, "smoke", False):  # before the overrides: what the user sets wins
        apply_smoke(cfg)
    before = _numeric_values(cfg, list(args.opts or []))
    cfg = LazyConfig.apply_overrides(cfg, list(args.opts or []))
    _check_numbers_stayed_numbers(cfg, before)
    if getattr(args, "fast_dev_run", False):
        _apply_fast_dev_run(cfg)
    if getattr(args, "smoke", False):  # after the overrides: data the user points at is used
        make_stand_ins(cfg)
    return cfg


def available_configs(near: str) -> List[str]:
    """Config files a user may have meant by ``near``: those in its folder (or the nearest
    existing parent), in ``configs/`` and in each ``projects/*/configs/``, seen from the current
    directory, the closest names first."""
    import difflib
    import glob

    folder = os.path.dirname(os.path.abspath(near))
    while folder and not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    found = set()
    for pattern in (os.path.join(folder, "*.py"), "configs/*.py", "configs/examples/*.py",
                    "projects/*/configs/*.py"):
        for path in glob.glob(pattern):
            if not os.path.basename(path).startswith("_"):
                found.add(os.path.relpath(path))
    close = difflib.get_close_matches(os.path.relpath(os.path.abspath(near)), sorted(found), n=3, cutoff=0.5)
    return close + sorted(found - set(close))


def _numeric_values(cfg: Any, opts: Sequence[str]) -> dict:
    """The numbers (and booleans) that the overrides ``opts`` are about to replace."""
    from omegaconf import OmegaConf

    found = {}
    for item in opts:
        key = item.split("=", 1)[0].lstrip("+~")
        if "=" not in item:
            continue
        try:
            old = OmegaConf.select(cfg, key, default=None)
        except Exception:
            continue
        if isinstance(old, (bool, int, float)):
            found[key] = old
    return found


def _check_numbers_stayed_numbers(cfg: Any, before: Mapping[str, Any]) -> None:
    """``train.train_iter=ten`` parses as the string 'ten' and would fail much later, deep in
    the trainer: refuse a word where the config holds a number or a boolean."""
    from omegaconf import OmegaConf

    for key, old in before.items():
        new = OmegaConf.select(cfg, key, default=None)
        if isinstance(new, str):
            kind = "True or False" if isinstance(old, bool) else "a number"
            raise ValueError(
                f"Override {key}={new!r}: {key} is {kind} (the config has {old!r}), not text. "
                f"Write e.g. {key}={old!r}"
            )


def _check_config_file(path: str) -> None:
    if os.path.isfile(path):
        return
    candidates = available_configs(path)
    listing = "\n  ".join(candidates[:40]) + ("\n  ..." if len(candidates) > 40 else "")
    raise FileNotFoundError(
        f"--config-file {path}: no such file (current directory: {os.getcwd()}). "
        + (f"Available configs:\n  {listing}" if candidates else
           "No config files here either: run from the repository root, or give the file's full path")
    )


def _apply_fast_dev_run(cfg: Any) -> None:
    """A handful of iterations with logging, evaluation and checkpointing every few steps."""
    t = cfg.train
    t.train_iter, t.train_epoch = 10, 0
    if "train_samples" in t:
        t.train_samples = None
    t.log_period = 1
    t.evaluation.eval_period = 5
    t.evaluation.eval_iter = 2
    t.checkpointer.period = 5
    logger.info("--fast-dev-run: 10 iterations, logging every iteration, evaluating every 5 on 2 batches")


def evaluate_only(cfg: Any, trainer_cls: Type[DefaultTrainer] = DefaultTrainer) -> Mapping[str, Any]:
    """``--eval-only``: load weights (``train.load_weight``, else the newest checkpoint in
    ``output_dir``) and evaluate on every test loader."""
    cfg = complete_config(cfg)
    layout = trainer_cls.build_layout(cfg)
    with layout:
        flow.manual_seed(int(cfg.train.seed))
        tokenizer = trainer_cls.build_tokenizer(cfg)  # before the model: it may set vocab_size
        model = trainer_cls.build_model(cfg)
        install_input_checks(model)
        loaders = trainer_cls.build_test_loader(cfg, tokenizer)
        if not loaders:
            raise ValueError("--eval-only needs test data: cfg.dataloader.test is empty")
        checkpointer = Checkpointer(model, cfg.train.output_dir)
        weights = cfg.train.load_weight
        if not weights and checkpointer.has_checkpoint():
            weights = checkpointer.get_checkpoint_file()
        if not weights:
            raise FileNotFoundError(
                f"--eval-only needs trained weights, but train.load_weight is empty and "
                f"{cfg.train.output_dir} holds no checkpoint. Pass train.load_weight=PATH/TO/model_final "
                "or point train.output_dir at a finished run"
            )
        load_weight(model, weights, checkpointer)  # also a Hugging Face directory
        logger.info(f"--eval-only: evaluating weights from {weights}")
        if cfg.graph.enabled:
            model = trainer_cls._build_eval_graph(cfg, model, layout) or model
        return trainer_cls.test(cfg, loaders, model, layout=layout)


def main(args: argparse.Namespace, trainer_cls: Type[DefaultTrainer] = DefaultTrainer) -> Any:
    """The whole program behind ``tools/train_net.py`` (see the module docstring).

    Returns the last evaluation's results; raises
    :class:`~libai.engine.default_trainer.TrainingFailed` when a hook stopped the run as failed.
    """
    if args.eval_only:
        with _logged_after_setup() as replay:
            cfg = load_config(args)
        with hold_output_dir(cfg.train.output_dir):  # one live run per output_dir (libai.utils.run_lock)
            default_setup(cfg, args)
            replay()
            return evaluate_only(cfg, trainer_cls)
    # A stop signal from here on (Ctrl-C, a scheduler's SIGTERM) is kept for the training, which
    # saves its first iteration and ends cleanly, instead of killing a run that is starting.
    with catch_stop_signals():
        with _logged_after_setup() as replay:
            cfg = load_config(args)
        with hold_output_dir(cfg.train.output_dir):
            default_setup(cfg, args)
            replay()
            trainer = trainer_cls(cfg)
            trainer.resume_or_load(resume=args.resume)
            return trainer.train()


# What loading the config says (``--smoke``'s changes and stand-ins, ``--fast-dev-run``)
_LOAD_LOGGERS = ("libai.engine.cli", "libai.engine.smoke", "libai.engine.smoke_data")


@contextlib.contextmanager
def _logged_after_setup() -> Iterator[Callable[[], None]]:
    """Hold what the config loading logs and hand back a function that logs it.

    The config is loaded before :func:`~libai.engine.setup.default_setup` sets the logger up
    (it needs the config's output folder), so its messages would otherwise vanish: they are
    held (not printed) here and replayed after the set-up, into the console and ``log.txt``.
    """
    held: List[logging.LogRecord] = []
    loggers = [logging.getLogger(name) for name in _LOAD_LOGGERS]
    levels = [log.level for log in loggers]

    def hold(record: logging.LogRecord) -> bool:
        held.append(record)
        return False

    for log in loggers:
        log.setLevel(logging.INFO)
        log.addFilter(hold)

    def replay() -> None:
        for record in held:
            logging.getLogger(record.name).handle(record)
        held.clear()

    try:
        yield replay
    finally:
        for log, level in zip(loggers, levels):
            log.removeFilter(hold)
            log.setLevel(level)


def launch_main(trainer_cls: Type[DefaultTrainer] = DefaultTrainer, argv: Optional[Sequence[str]] = None) -> Any:
    """Parse the command line and run :func:`main` (what ``tools/train_net.py`` calls).

    How the program ends: a run that stopped itself as failed prints its reason last; a user's
    mistake (:func:`libai.engine.user_errors.is_user_error`: a missing file, a bad key or value)
    prints its message once, without a traceback unless ``LIBAI_FULL_ERROR=1``; both exit with
    status 1. Anything else is a bug and raises with its traceback.
    """
    args = default_argument_parser().parse_args(argv)
    try:
        if getattr(args, "dry_run", False) or getattr(args, "suggest", False):  # preflight: no training
            from libai.plan.cli import run_dry_run

            sys.exit(run_dry_run(args))
        return main(args, trainer_cls)
    except TrainingFailed as failure:
        exit_with_failure(str(failure))
    except Exception as error:
        message = user_error_message(error)
        if message is not None:
            exit_with_user_error(message)
        if dist.get_world_size() > 1:
            exit_now_on_failure()
        raise


def exit_with_user_error(message: str) -> None:
    """End with a user's mistake stated once, without a traceback (``LIBAI_FULL_ERROR=1`` shows
    it). Every rank made the same mistake; rank 0 says it, and each ends at once, as in
    :func:`exit_now_on_failure`, so that none waits for the others."""
    logging.shutdown()
    sys.stdout.flush()
    if dist.is_main_process():
        print(message, file=sys.stderr, flush=True)
    sys.stderr.flush()
    if dist.get_world_size() > 1:
        os._exit(1)
    sys.exit(1)


def exit_with_failure(reason: str) -> None:
    """End the program with exit status 1 and ``reason`` as the last lines of its output.

    For a run that stopped itself as failed: every rank stopped at the same iteration, so all
    of them end here together (rank 0 prints the reason; the log already holds it).
    """
    logger.error(reason)
    logging.shutdown()
    sys.stdout.flush()
    if dist.is_main_process():
        print(reason, file=sys.stderr, flush=True)
    sys.exit(1)


def exit_now_on_failure() -> None:
    """End this rank at once with the error printed and exit code 1.

    In a multi-process run a rank that raises would otherwise hang at interpreter exit (OneFlow
    waits for its peers), and the peers hang in their next collective; exiting hard lets the
    launcher see the failure and stop every rank, so the whole launch fails with this error.
    """
    traceback.print_exc()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)
