"""Saves a checkpoint and stops cleanly when the job is told to stop (SIGTERM / SIGINT / SIGUSR1).

A stop signal may come at any moment of a run: while it starts (config, data, model), while it
loads a batch, trains a step, evaluates or saves. :func:`catch_stop_signals` (the command line
holds it around the whole run) records a signal that arrives before training starts; the
:class:`PreemptionHandler` hook takes it over, so the run trains its first iteration, saves it
and ends as after any stop. Loader workers leave these signals to the training process
(:mod:`libai.data.worker_failures`), so a stop during an evaluation finishes that evaluation.
"""
import contextlib
import logging
import signal
import time
from typing import Any, Dict, Iterator, Optional

import oneflow as flow

from libai.engine.trainer import HookBase
from libai.utils import distributed as dist

logger = logging.getLogger(__name__)


# What catch_stop_signals recorded, its handler, and the handlers it replaced.
_pending: Dict[str, Any] = {"signum": None, "at": None, "handler": None, "replaced": {}}


def pending_stop_signal() -> Optional[int]:
    """The stop signal :func:`catch_stop_signals` recorded before training started, if any."""
    return _pending["signum"]


@contextlib.contextmanager
def catch_stop_signals(repeat_window: float = 1.0) -> Iterator[None]:
    """Record SIGTERM, SIGINT and SIGUSR1 in the body instead of dying at once, for the
    :class:`PreemptionHandler` of the training that follows to act on (a run stopped while it
    starts saves its first iteration). A repeat of the same signal more than ``repeat_window``
    seconds later gets the default behaviour (a second Ctrl-C ends the process). The handlers
    that were installed before are put back at the end. Outside the main thread it does nothing.
    """
    _pending.update(signum=None, at=None)

    def on_signal(signum: int, frame: Any) -> None:
        if _pending["signum"] is None:
            _pending.update(signum=signum, at=time.monotonic())
            logger.warning(f"Received {signal.Signals(signum).name} while starting: training will "
                           "stop after its first iteration and save a checkpoint")
        elif time.monotonic() - _pending["at"] >= repeat_window:
            signal.signal(signum, previous.get(signum) or signal.SIG_DFL)
            signal.raise_signal(signum)

    previous: Dict[int, Any] = {}
    try:
        for sig in PreemptionHandler.SIGNALS:
            previous[sig] = signal.signal(sig, on_signal)
    except ValueError:  # not the main thread
        previous.clear()
    _pending.update(handler=on_signal, replaced=previous)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if signal.getsignal(sig) is on_signal:
                signal.signal(sig, handler)
        _pending.update(signum=None, at=None, handler=None, replaced={})


class PreemptionHandler(HookBase):
    """On SIGTERM, SIGINT or SIGUSR1 (Slurm's ``--signal`` warning), finish the current iteration
    and stop training cleanly; the :class:`PeriodicCheckpointer` then saves ``model_{iter:07d}``
    for ``--resume``.

    A scheduler that preempts a job sends SIGTERM; Ctrl-C sends SIGINT. A second signal of the
    same kind while saving falls back to the default behaviour (e.g. a second Ctrl-C ends the
    process), except within ``REPEAT_WINDOW_SECONDS`` of the first: that is one request
    delivered twice, by ``python -m libai.launch`` and by a scheduler that signals every process
    of the job (Slurm at a time limit). In a multi-process run the flag is combined across ranks
    every ``check_period`` iterations (a one-element all-reduce, which costs a synchronisation,
    so not every step), so every rank stops at the same iteration even when only one received
    the signal.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)
    REPEAT_WINDOW_SECONDS = 1.0

    def __init__(self, check_period: int = 10) -> None:
        self.check_period = max(1, int(check_period))
        self._received: Optional[int] = None
        self._previous: Dict[int, Any] = {}
        self._first_at: Dict[int, float] = {}

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._received = signum
        first = self._first_at.setdefault(signum, time.monotonic())
        if time.monotonic() - first < self.REPEAT_WINDOW_SECONDS:
            return  # the first signal, or the same request delivered twice
        # A later repeat gets the default behaviour (e.g. kill on a second Ctrl-C).
        signal.signal(signum, self._previous.get(signum) or signal.SIG_DFL)
        signal.raise_signal(signum)

    def before_train(self) -> None:
        early = pending_stop_signal()
        if early is not None:  # arrived while the run was starting (catch_stop_signals)
            self._received = early
            self._first_at[early] = _pending["at"]
            _pending.update(signum=None, at=None)
        try:
            for sig in self.SIGNALS:
                previous = signal.signal(sig, self._on_signal)
                if previous is not None and previous is _pending["handler"]:
                    previous = _pending["replaced"].get(sig)  # what the start-up catcher replaced
                self._previous[sig] = previous
        except ValueError:
            # Not in the main thread: signals cannot be caught here; nothing to install.
            self._previous.clear()

    def _anyone_received(self) -> bool:
        if dist.get_world_size() == 1:
            return self._received is not None
        if not (self.every_n_iters(self.check_period) or self.is_last_iter()):
            return False
        flag = flow.tensor([1.0 if self._received is not None else 0.0])
        everyone = flow.placement(self.trainer.layout.device_type, ranks=list(range(dist.get_world_size())))
        total = flag.to(self.trainer.layout.device).to_global(placement=everyone, sbp=flow.sbp.split(0)).sum()
        return float(total.to_global(sbp=flow.sbp.broadcast).to_local().item()) > 0

    def after_step(self) -> None:
        if not self._anyone_received():
            return
        name = signal.Signals(self._received).name if self._received else "a signal on another rank"
        self.trainer.request_stop(f"received {name}; saving a checkpoint to resume from with --resume")

    def after_train(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
        self._first_at.clear()
