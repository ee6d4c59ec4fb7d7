"""Make every failure of a DataLoader worker reach the training process as an error.

OneFlow's DataLoader (0.9, torch-like) already re-raises an exception thrown by a worker's
``__getitem__``/``collate_fn`` and notices a worker that died. One failure it never sees: a worker
puts its finished batch on a ``multiprocessing.Queue``, whose background *feeder thread* pickles
it later; when that pickling fails (``/dev/shm`` full while moving tensors to shared memory, an
object that cannot be pickled), Python only prints the traceback in the worker and drops the
batch. The worker stays alive, so the main process waits for that batch forever.

:func:`reporting_context` gives the loader a multiprocessing context whose queues send such a
failure on as the batch's error instead, which the loader re-raises like any worker exception.
:func:`explain_worker_exit` adds to the loader's "worker exited unexpectedly" error which worker
died and of what (exit code or signal), with the usual causes.

A stop signal must not kill the workers either. Ctrl-C reaches every process of the terminal's
process group, ``timeout`` and ``kill -- -PGID`` signal the group, and Slurm signals every process
of a job step: OneFlow's workers exit on SIGINT/SIGTERM (and SIGUSR1 terminates any process by
default), after which the training process, which took the same signal as a request to stop
cleanly, fails with "DataLoader worker exited unexpectedly" in the middle of an evaluation.
The workers of :func:`reporting_context` therefore leave these signals to the training process
(:func:`guard_worker_signals`): they ignore them while it lives, and it ends them as it ends any
loader. A worker whose training process has died still exits on them (OneFlow asks the kernel to
send SIGINT to a worker when its parent dies).
"""
import multiprocessing
import multiprocessing.context
import multiprocessing.queues
import os
import signal
from typing import Any, Callable, List, Optional

from oneflow._utils import ExceptionWrapper

__all__ = ["ReportingQueue", "StopSignalGuard", "explain_worker_exit", "guard_worker_signals",
           "reporting_context"]

#: The signals that ask a training run to stop (:class:`libai.engine.hooks.PreemptionHandler`).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)


class ReportingQueue(multiprocessing.queues.Queue):
    """A ``multiprocessing.Queue`` that turns a failure to send ``(index, batch)`` into
    ``(index, ExceptionWrapper)``, so the receiving DataLoader raises it instead of waiting."""

    def _on_queue_feeder_error(self, e: BaseException, obj: Any) -> None:  # runs in the feeder thread
        if not (isinstance(obj, tuple) and len(obj) == 2):
            return super()._on_queue_feeder_error(e, obj)
        index, payload = obj
        worker = _worker_id()
        if isinstance(payload, ExceptionWrapper):
            # The error report itself did not pickle (e.g. an exception class defined locally):
            # send its text under a type that always pickles.
            report = ExceptionWrapper(
                exc_info=(RuntimeError, RuntimeError(payload.exc_msg), None), where=payload.where
            )
        else:
            report = ExceptionWrapper(
                exc_info=(type(e), e, e.__traceback__),
                where=(
                    f"in DataLoader worker process {worker} while sending its batch to the main "
                    "process (pickling the batch failed: is /dev/shm full, or does the batch hold "
                    "an object that cannot be pickled?)"
                ),
            )
        self.put((index, report))


def _worker_id() -> str:
    from oneflow.utils.data import get_worker_info

    info = get_worker_info()
    return str(info.id) if info is not None else "?"


def guard_worker_signals() -> None:
    """In a loader worker: leave SIGINT, SIGTERM and SIGUSR1 to the training process.

    While the process that started this worker lives, the signals are ignored (it received them
    too, or they were meant for the job, and it stops the loader itself); once it has died, or
    when it terminates this worker (``Process.terminate()``, or Python ending daemon processes at exit), the
    handler that was installed before (OneFlow's: free shared memory and exit) runs, or the worker
    exits. Then the signals are unblocked: a worker of :func:`reporting_context` starts with them
    blocked, so one that arrived while it started is taken here, not by OneFlow's handler.
    """
    parent = os.getppid()
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    # set by the parent's Process.terminate() (the loader shutting its workers down, or Python's
    # exit ending daemon processes): then SIGTERM is meant for this worker
    asked = getattr(multiprocessing.current_process(), "_terminate_requested", None)

    def on_stop_signal(signum: int, frame: Any) -> None:
        if os.getppid() == parent and not (asked is not None and asked.value):
            return
        handler = previous.get(signum)
        if callable(handler) and signum != signal.SIGUSR1:  # SIGUSR1's is the parent's, inherited
            handler(signum, frame)
        os._exit(128 + signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_stop_signal)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if os.getppid() != parent:  # died before the handler was in place
        on_stop_signal(signal.SIGTERM, None)


class StopSignalGuard:
    """A loader's ``worker_init_fn`` that first calls :func:`guard_worker_signals`, then the
    wrapped one (picklable, for the ``spawn`` start method)."""

    def __init__(self, init_fn: Optional[Callable[[int], Any]] = None) -> None:
        self.init_fn = init_fn

    def __call__(self, worker_id: int) -> None:
        guard_worker_signals()
        if self.init_fn is not None:
            self.init_fn(worker_id)


def reporting_context(method: Optional[str] = None) -> multiprocessing.context.BaseContext:
    """The multiprocessing context ``method`` (default: the platform's) with :class:`ReportingQueue`
    queues and workers started with the stop signals blocked (unblocked by
    :class:`StopSignalGuard`, which the loader must use as its ``worker_init_fn``); give it to a
    DataLoader as ``multiprocessing_context``."""
    base = multiprocessing.get_context(method)

    class _GuardedProcess(base.Process):  # type: ignore[misc,name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._terminate_requested = base.RawValue("b", 0)  # read by the worker's guard

        def start(self) -> None:
            # Blocked across the fork: the child inherits the mask, so a Ctrl-C arriving before
            # its guard is installed waits for it instead of reaching OneFlow's exit handler.
            before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            try:
                super().start()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, before)
            # Process.terminate() and Python's exit (which ends daemon workers through
            # ``_popen.terminate()`` directly) both send SIGTERM through the Popen object.
            popen, flag = self._popen, self._terminate_requested
            send_sigterm = popen.terminate

            def terminate() -> None:
                flag.value = 1
                send_sigterm()

            popen.terminate = terminate

    class _ReportingContext(type(base)):  # type: ignore[misc]
        Process = _GuardedProcess

        def Queue(self, maxsize: int = 0) -> ReportingQueue:  # noqa: N802 (multiprocessing's name)
            return ReportingQueue(maxsize, ctx=base)

    return _ReportingContext()


def explain_worker_exit(error: RuntimeError, iterator: Any) -> Optional[RuntimeError]:
    """A clearer error for OneFlow's "DataLoader worker ... exited unexpectedly", naming each dead
    worker with its exit code or signal; None when ``error`` is something else."""
    if "exited unexpectedly" not in str(error):
        return None
    dead: List[str] = []
    for worker_id, process in enumerate(getattr(iterator, "_workers", []) or []):
        code = process.exitcode
        if code is None or code == 0:
            continue
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            dead.append(f"worker {worker_id} (pid {process.pid}) was killed by {name}")
        else:
            dead.append(f"worker {worker_id} (pid {process.pid}) exited with code {code}")
    if not dead:
        return None
    return RuntimeError(
        f"a DataLoader worker died: {'; '.join(dead)}. SIGKILL usually means the machine ran out of "
        "memory (the kernel's OOM killer), SIGBUS that /dev/shm is full (enlarge it, e.g. docker "
        "--shm-size, or use fewer workers); num_workers=0 runs the dataset in this process, where "
        f"its own error shows. ({error})"
    )

