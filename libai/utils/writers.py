"""Writers: turn what the :class:`~libai.utils.storage.EventStorage` holds into files and lines.

* :class:`JSONWriter` appends one JSON object per logged iteration to ``metrics.json``;
* :class:`CommonMetricPrinter` logs the one-line progress report (ETA, losses, lr, times,
  throughput, memory);
* :class:`TensorboardXWriter` sends scalars to TensorBoard.

A run that resumes (``--resume``, or a restart by ``python -m libai.launch --max-restarts``)
appends to the same ``metrics.json`` and ``log.txt`` without repeating an iteration: at their
first write, :class:`JSONWriter` drops the lines of iterations at or after the storage's
``start_iter`` (what the interrupted attempt logged after its checkpoint, which this run redoes)
and :class:`CommonMetricPrinter` drops its own progress lines of those iterations from the log
files it writes to; each file is replaced atomically (written aside, then renamed over).

Everything of one process that goes to TensorBoard in one ``log_dir`` (these scalars, and the
images, histograms and per-group learning rates of
:class:`~libai.engine.hooks.TensorboardVisuals`) shares one ``SummaryWriter`` through
:func:`open_summary_writer`, so the folder holds one live event file: TensorBoard polls only the
newest event file of a folder, and a second writer's file would stop updating on screen.

A writer reads the storage that is current when :meth:`EventWriter.write` is called, so one
writer serves every storage of a run. In a multi-process run only rank 0 should own writers
(``DefaultTrainer.build_writers`` decides); the storage itself exists on every rank.
"""
import datetime
import json
import logging
import os
import re
import sys
import weakref
from typing import Any, Dict, List, Optional, Tuple

from libai.utils.storage import EventStorage, get_event_storage

__all__ = [
    "EventWriter",
    "JSONWriter",
    "CommonMetricPrinter",
    "TensorboardXWriter",
    "open_summary_writer",
    "release_summary_writer",
]

logger = logging.getLogger(__name__)


class EventWriter:
    """Base class: ``write()`` is called every log period, ``close()`` once at the end."""

    def write(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> "EventWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _NewScalarsMixin:
    """Remembers how far into the storage a writer has read, so nothing is written twice."""

    def _init_tracking(self, window_size: int, samples_per_iter: Optional[float]) -> None:
        if window_size < 1:
            raise ValueError(f"window_size must be >= 1, got {window_size}")
        if samples_per_iter is not None and samples_per_iter <= 0:
            raise ValueError(
                f"samples_per_iter must be the (positive) global batch size, got {samples_per_iter}"
            )
        self._window_size = int(window_size)
        self._samples_per_iter = samples_per_iter
        self._storage_ref: Optional["weakref.ref[EventStorage]"] = None
        self._last_seq = 0

    def _new_scalars(self) -> Dict[int, Dict[str, float]]:
        storage = get_event_storage()
        if self._storage_ref is None or self._storage_ref() is not storage:
            # A different storage (a new run, or evaluation after training): start over.
            self._storage_ref = weakref.ref(storage)
            self._last_seq = 0
        groups, self._last_seq = storage.scalars_since(self._last_seq, self._window_size)
        for scalars in groups.values():
            add_throughput(scalars, self._samples_per_iter)
        return groups


def add_throughput(scalars: Dict[str, float], samples_per_iter: Optional[float]) -> None:
    """Add ``throughput`` (samples/s) to a training group that has a positive ``time``."""
    time_per_iter = scalars.get("time")
    if samples_per_iter and time_per_iter and time_per_iter > 0 and "throughput" not in scalars:
        scalars["throughput"] = samples_per_iter / time_per_iter


class JSONWriter(_NewScalarsMixin, EventWriter):
    """Append the scalars new since the last write to ``json_file``, one object per iteration.

    The file is opened in append mode and flushed after every write, so a resumed run continues
    the same file and a crash loses nothing already written. Training lines hold ``iteration``,
    the losses, ``lr``, ``time``, ``data_time``, ``throughput`` (when ``samples_per_iter`` is
    given) and any other scalar put since the last write; evaluation results put with
    ``cur_iter`` appear under the iteration they belong to.

    Args:
        json_file: usually ``{output_dir}/metrics.json``; parent folders are created.
        window_size: smoothed scalars are written as the median of this many last values.
        samples_per_iter: the global batch size, for ``throughput = samples_per_iter / time``.
    """

    def __init__(
        self, json_file: str, window_size: int = 20, samples_per_iter: Optional[float] = None
    ) -> None:
        self._init_tracking(window_size, samples_per_iter)
        self._path = json_file
        parent = os.path.dirname(os.path.abspath(json_file))
        os.makedirs(parent, exist_ok=True)
        self._file = self._open()
        self._cut_done = False

    def _open(self) -> Any:
        ends_mid_line = _ends_without_newline(self._path)
        file = open(self._path, "a", encoding="utf-8")
        if ends_mid_line:
            # A crashed run left half a line: end it so that our first line stands alone.
            file.write("\n")
        return file

    @property
    def path(self) -> str:
        return self._path

    def write(self) -> None:
        if not self._cut_done:
            self._cut_done = True
            self._file.flush()
            if drop_json_iterations_from(self._path, get_event_storage().start_iter):
                self._file.close()
                self._file = self._open()
        lines = []
        for iteration, scalars in self._new_scalars().items():
            lines.append(json.dumps({"iteration": iteration, **scalars}) + "\n")
        if lines:
            self._file.write("".join(lines))
            self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


def _rewrite(path: str, keep: Any) -> int:
    """Replace the text file at ``path`` by its lines for which ``keep(line)`` is true, atomically
    (a temporary file renamed over it); returns how many lines were dropped (0: file untouched)."""
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        lines = f.read().splitlines(keepends=True)
    kept = [line for line in lines if keep(line)]
    if len(kept) == len(lines):
        return 0
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.writelines(line if line.endswith("\n") else line + "\n" for line in kept)
    os.replace(tmp, path)
    return len(lines) - len(kept)


def drop_json_iterations_from(path: str, start_iter: int) -> int:
    """Drop the lines of ``metrics.json`` at ``path`` whose ``iteration`` is ``start_iter`` or
    later (a resumed run logs them again), atomically. Lines that do not parse are kept."""

    def keep(line: str) -> bool:
        try:
            return int(json.loads(line)["iteration"]) < start_iter
        except (ValueError, KeyError, TypeError):
            return True

    return _rewrite(path, keep)


def drop_progress_lines_from(handler: logging.FileHandler, logger_name: str, start_iter: int) -> int:
    """Drop from ``handler``'s file the progress lines (``iter: N/...``) that ``logger_name`` logged
    for iterations ``start_iter`` and later, then point the handler at the new file."""
    pattern = re.compile(rf"\] {re.escape(logger_name)} INFO: iter: (\d+)/")

    def keep(line: str) -> bool:
        found = pattern.search(line)
        return found is None or int(found.group(1)) < start_iter

    handler.acquire()
    try:
        handler.flush()
        dropped = _rewrite(handler.baseFilename, keep)
        if dropped and handler.stream is not None:
            old = handler.setStream(open(handler.baseFilename, "a", encoding=handler.encoding))
            if old is not None:
                old.close()
        return dropped
    finally:
        handler.release()


def _file_handlers(log: logging.Logger) -> List[logging.FileHandler]:
    """The file handlers a record of ``log`` reaches (its own and, while it propagates, its parents')."""
    found: List[logging.FileHandler] = []
    current: Optional[logging.Logger] = log
    while current is not None:
        found += [h for h in current.handlers if isinstance(h, logging.FileHandler)]
        if not current.propagate:
            break
        current = current.parent
    return found


def _ends_without_newline(path: str) -> bool:
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return False
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


class TensorboardXWriter(_NewScalarsMixin, EventWriter):
    """Write the scalars new since the last write to TensorBoard event files in ``log_dir``.

    ``tensorboardX`` is an optional dependency, imported only when this writer is built.
    Names with characters TensorBoard does not allow in tags are shown with ``_`` instead
    (``Acc@1`` appears as ``Acc_1``).

    Args:
        log_dir: the folder TensorBoard is pointed at (``tensorboard --logdir <log_dir>``).
        window_size: smoothed scalars are written as the median of this many last values.
        samples_per_iter: the global batch size, to add ``throughput`` as in :class:`JSONWriter`.
        kwargs: passed to ``tensorboardX.SummaryWriter``.
    """

    def __init__(
        self,
        log_dir: str,
        window_size: int = 20,
        samples_per_iter: Optional[float] = None,
        **kwargs: Any,
    ) -> None:
        self._init_tracking(window_size, samples_per_iter)
        self._log_dir = log_dir
        self._shared = not kwargs  # custom SummaryWriter arguments get a writer of their own
        if self._shared:
            self._writer = open_summary_writer(log_dir)
        else:
            self._writer = _summary_writer_class()(log_dir, **kwargs)
        self._released = False

    def write(self) -> None:
        groups = self._new_scalars()
        for iteration, scalars in groups.items():
            for name, value in scalars.items():
                self._writer.add_scalar(tensorboard_tag(name), value, iteration)
        if groups:
            self._writer.flush()

    def close(self) -> None:
        if self._shared and not self._released:
            self._released = True
            release_summary_writer(self._log_dir)  # closes it when no hook holds it any more
        else:
            # Writing after a close reopens a file (tensorboardX does): close that one too.
            self._writer.close()


def _summary_writer_class() -> Any:
    try:
        from tensorboardX import SummaryWriter
    except ImportError as e:
        raise ImportError(
            "TensorBoard logging needs the optional package tensorboardX: "
            "`pip install tensorboardX==2.6.5` (or leave TensorboardXWriter out of "
            "build_writers)"
        ) from e
    return SummaryWriter


# log_dir (absolute) -> [SummaryWriter, number of holders]
_SHARED_WRITERS: Dict[str, List[Any]] = {}


def open_summary_writer(log_dir: str) -> Any:
    """The ``tensorboardX.SummaryWriter`` of this process for ``log_dir``, created on first use.

    Every caller must call :func:`release_summary_writer` once when done; the writer is closed
    when the last holder releases it. Raises ImportError (saying how to install it) when
    tensorboardX is missing.
    """
    key = os.path.abspath(log_dir)
    entry = _SHARED_WRITERS.get(key)
    if entry is None:
        entry = _SHARED_WRITERS[key] = [_summary_writer_class()(log_dir), 0]
    entry[1] += 1
    return entry[0]


def release_summary_writer(log_dir: str) -> None:
    """Give back what :func:`open_summary_writer` returned; the last release flushes and closes
    the event file. Releasing a folder that is not open is a no-op."""
    key = os.path.abspath(log_dir)
    entry = _SHARED_WRITERS.get(key)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _SHARED_WRITERS[key]
        entry[0].close()


_ILLEGAL_TAG_CHARS = re.compile(r"[^-/\w.]")


def tensorboard_tag(name: str) -> str:
    """The TensorBoard tag for a scalar name: characters TensorBoard rejects become ``_``
    (``Acc@1`` -> ``Acc_1``), done here so tensorboardX does not log a rename every write."""
    return _ILLEGAL_TAG_CHARS.sub("_", name)


class CommonMetricPrinter(EventWriter):
    """Log one progress line per log period, e.g.::

        iter: 120/1000  eta: 0:03:12  total_loss: 0.4123  lr: 1.00e-04  time: 0.1200
        data_time: 0.0010  throughput: 533.3 samples/s  max_rss: 812M

    ``iter`` is the storage's iteration (0-based, the same number as in ``metrics.json``).
    ``time`` is shown as the storage holds it: the latest value when it was put with
    ``smoothing_hint=False`` (what :class:`~libai.engine.hooks.IterationTimer` does: its value is
    already the wall-clock mean over the last log period), else the median over the window. The
    ETA is that time times the iterations left, and ``throughput`` the global batch over it, so
    both agree with the wall clock too. ``data_time`` is the median time the training loop
    waited for the next batch. Memory is the
    process's peak resident memory (``max_rss``) on the CPU, and on CUDA the peak device memory
    this process was seen using (``max_mem``; read through NVML, since OneFlow 0.9 has no
    peak-memory API; left out with a one-time note when ``pynvml`` is not installed).

    Args:
        max_iter: total iterations of the run, for the ETA.
        window_size: losses and times are medians over this many last values.
        samples_per_iter: the global batch size, for ``throughput``.
        device_type: ``"cpu"`` or ``"cuda"``; default: the current parallel layout's device, or
            what the machine has.
        log: the logger to write to (default ``libai.utils.writers``).
    """

    def __init__(
        self,
        max_iter: int,
        window_size: int = 20,
        samples_per_iter: Optional[float] = None,
        device_type: Optional[str] = None,
        log: Optional[logging.Logger] = None,
    ) -> None:
        if max_iter < 1:
            raise ValueError(f"CommonMetricPrinter max_iter must be >= 1, got {max_iter}")
        if window_size < 1:
            raise ValueError(f"window_size must be >= 1, got {window_size}")
        self._max_iter = int(max_iter)
        self._window_size = int(window_size)
        self._samples_per_iter = samples_per_iter
        self._memory = PeakMemory(device_type or _default_device_type())
        self._logger = log or logger
        self._last_printed: Optional[Tuple[int, int]] = None
        self._cut_done = False

    def write(self) -> None:
        storage = get_event_storage()
        key = (id(storage), storage.iter)
        if not storage.histories() or key == self._last_printed:
            return  # nothing recorded yet, or this iteration was already printed
        self._last_printed = key
        if not self._cut_done:  # a resumed run: its log files lose the lines it will print again
            self._cut_done = True
            for handler in _file_handlers(self._logger):
                drop_progress_lines_from(handler, self._logger.name, storage.start_iter)
        self._logger.info(self.format_line(storage))

    def format_line(self, storage: EventStorage) -> str:
        """The progress line for the storage's current state."""
        w = self._window_size
        fields = [f"iter: {storage.iter}/{self._max_iter}"]
        time_per_iter = _as_stored(storage, "time", w)
        if time_per_iter is not None:
            remaining = max(self._max_iter - storage.iter - 1, 0)
            eta = datetime.timedelta(seconds=int(round(time_per_iter * remaining)))
            fields.append(f"eta: {eta}")
        for name, history in storage.histories().items():
            if "loss" in name:
                fields.append(f"{name}: {history.median(w):.4f}")
        if storage.has_history("lr"):
            fields.append(f"lr: {storage.history('lr').latest():.2e}")
        if time_per_iter is not None:
            fields.append(f"time: {time_per_iter:.4f}")
        data_time = _median(storage, "data_time", w)
        if data_time is not None:
            fields.append(f"data_time: {data_time:.4f}")
        scalars: Dict[str, float] = {} if time_per_iter is None else {"time": time_per_iter}
        add_throughput(scalars, self._samples_per_iter)
        if "throughput" in scalars:
            fields.append(f"throughput: {scalars['throughput']:.1f} samples/s")
        memory = self._memory.read()
        if memory is not None:
            fields.append(f"{memory[0]}: {memory[1]:.0f}M")
        return "  ".join(fields)


def _as_stored(storage: EventStorage, name: str, window: int) -> Optional[float]:
    """The latest value of a scalar put without smoothing, else the median over ``window``:
    what the JSON and TensorBoard writers write for it too."""
    if not storage.has_history(name):
        return None
    history = storage.history(name)
    return history.median(window) if storage.smoothing_hint(name) else history.latest()


def _median(storage: EventStorage, name: str, window: int) -> Optional[float]:
    return storage.history(name).median(window) if storage.has_history(name) else None


def _default_device_type() -> str:
    from libai.utils import distributed as dist

    return dist.current_layout().device_type if dist.has_layout() else dist.default_device_type()


class PeakMemory:
    """Peak memory of this process in MiB, labelled by what it measures.

    ``read()`` returns ``("max_rss", MiB)`` on the CPU (``resource.getrusage``), and
    ``("max_mem", MiB)`` on CUDA (the largest device memory NVML has reported for this process
    so far), or ``None`` when it cannot be measured.
    """

    def __init__(self, device_type: str) -> None:
        if device_type not in ("cpu", "cuda"):
            raise ValueError(f"device_type must be 'cpu' or 'cuda', got {device_type!r}")
        self.device_type = device_type
        self._peak_device_mib = 0.0
        self._nvml: Any = None
        self._nvml_missing_noted = False

    def read(self) -> Optional[Tuple[str, float]]:
        if self.device_type == "cpu":
            return ("max_rss", peak_rss_mib())
        used = self._device_mib()
        if used is None:
            return None
        self._peak_device_mib = max(self._peak_device_mib, used)
        return ("max_mem", self._peak_device_mib)

    def _device_mib(self) -> Optional[float]:
        nvml = self._load_nvml()
        if nvml is None:
            return None
        pid = os.getpid()
        used = 0
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                if proc.pid == pid and proc.usedGpuMemory:
                    used += proc.usedGpuMemory
        return used / 2**20

    def _load_nvml(self) -> Any:
        if self._nvml is None and not self._nvml_missing_noted:
            try:
                import pynvml

                pynvml.nvmlInit()
                self._nvml = pynvml
            except Exception as e:  # ImportError, or NVML failing to start
                self._nvml_missing_noted = True
                logger.info(
                    "device memory is left out of the progress line: OneFlow 0.9 has no "
                    "peak-memory API and NVML is unavailable (%s); `pip install nvidia-ml-py` "
                    "to show it", e,
                )
        return self._nvml


def peak_rss_mib() -> float:
    """Peak resident memory of this process in MiB (``ru_maxrss`` is KiB on Linux, bytes on
    macOS)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024
