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
"""
import multiprocessing
import multiprocessing.context
import multiprocessing.queues
import signal
from typing import Any, List, Optional

from oneflow._utils import ExceptionWrapper

__all__ = ["ReportingQueue", "explain_worker_exit", "reporting_context"]


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


def reporting_context(method: Optional[str] = None) -> multiprocessing.context.BaseContext:
    """The multiprocessing context ``method`` (default: the platform's) with :class:`ReportingQueue`
    queues; give it to a DataLoader as ``multiprocessing_context``."""
    base = multiprocessing.get_context(method)

    class _ReportingContext(type(base)):  # type: ignore[misc]
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

