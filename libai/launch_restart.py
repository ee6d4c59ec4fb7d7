"""What ``python -m libai.launch --max-restarts N`` knows about a failed attempt, and what it
decides: restart every rank with ``--resume``, or stop.

The launcher stays free of model and trainer knowledge. What it reads about the run comes from
two plain files:

* a *run file* whose path the launcher gives every rank in ``LIBAI_LAUNCH_RUN_FILE``; rank 0 of
  a libai training writes its ``train.output_dir`` there (:mod:`libai.utils.launch_state`);
* in that output directory, ``last_checkpoint`` (the newest complete checkpoint, what
  ``--resume`` reads) and the last ``iteration`` of ``metrics.json``: how far the attempt got.

A failure is *deterministic* when the same rank fails at the same place twice in a row: the same
last logged iteration and the same newest checkpoint, i.e. the restart made no progress. Retrying
it again would only fail again, so the launcher stops there even with restarts left. Each restart
is appended to ``<output_dir>/restarts.log`` (which rank, its exit status or signal, the last lines
of its output), and printed.
"""
import collections
import json
import os
import signal
import threading
import time
from typing import IO, Deque, List, Optional, Tuple

__all__ = [
    "MAX_RESTARTS_VARIABLE", "RESTART_LOG", "RUN_FILE_VARIABLE", "TAIL_LINES", "Failure",
    "OutputTail", "RestartPolicy", "backoff_seconds", "describe_status", "run_progress",
]

MAX_RESTARTS_VARIABLE = "LIBAI_MAX_RESTARTS"
RUN_FILE_VARIABLE = "LIBAI_LAUNCH_RUN_FILE"  # libai.utils.launch_state.RUN_FILE_VARIABLE: rank 0 writes it
RESTART_LOG = "restarts.log"
TAIL_LINES = 20
BACKOFF_SECONDS = 1.0  # doubled after each restart, at most BACKOFF_MAX_SECONDS
BACKOFF_MAX_SECONDS = 30.0


def describe_status(returncode: int) -> str:
    """``-9`` -> ``"killed by SIGKILL (status 137)"``; ``3`` -> ``"exit status 3"``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name} (status {128 - returncode})"
    return f"exit status {returncode}"


def backoff_seconds(restart: int) -> float:
    """The pause before restart number ``restart`` (1, 2, ...): 1 s, 2 s, 4 s ... at most 30 s."""
    return min(BACKOFF_SECONDS * 2 ** (restart - 1), BACKOFF_MAX_SECONDS)


def read_output_dir(run_file: str) -> Optional[str]:
    """The output directory rank 0 reported in the run file, if it did."""
    try:
        with open(run_file) as f:
            return json.load(f).get("output_dir")
    except (OSError, ValueError, AttributeError):
        return None


def run_progress(output_dir: Optional[str]) -> Tuple[Optional[str], Optional[int]]:
    """``(newest checkpoint name, last iteration in metrics.json)`` of ``output_dir``; ``None``
    for what is not there."""
    if not output_dir:
        return None, None
    checkpoint = None
    try:
        with open(os.path.join(output_dir, "last_checkpoint")) as f:
            checkpoint = f.read().strip() or None
    except OSError:
        pass
    return checkpoint, _last_iteration(os.path.join(output_dir, "metrics.json"))


def _last_iteration(metrics: str) -> Optional[int]:
    """The ``iteration`` of the last complete line of ``metrics.json`` (read from its end)."""
    try:
        with open(metrics, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 65536))
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return int(json.loads(line)["iteration"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


class OutputTail:
    """Copies a rank's output stream to the launcher's own, line by line, keeping the last
    :data:`TAIL_LINES` lines: what the restart log shows of a rank that failed."""

    running: List[threading.Thread] = []

    def __init__(self, source: IO[bytes], sink: IO[bytes], lines: Deque[bytes]) -> None:
        self.thread = threading.Thread(target=self._copy, args=(source, sink, lines), daemon=True)
        self.thread.start()
        OutputTail.running.append(self.thread)

    @classmethod
    def finish_all(cls, timeout: float = 5.0) -> None:
        """Wait (at most ``timeout`` s in all) for every copy to reach the end of its stream."""
        deadline = time.monotonic() + timeout
        for thread in cls.running:
            thread.join(max(0.0, deadline - time.monotonic()))
        cls.running = [t for t in cls.running if t.is_alive()]

    @staticmethod
    def _copy(source: IO[bytes], sink: IO[bytes], lines: Deque[bytes]) -> None:
        for line in iter(source.readline, b""):
            lines.append(line)
            try:
                sink.write(line)
                sink.flush()
            except (OSError, ValueError):
                pass
        source.close()


def new_tail() -> Deque[bytes]:
    return collections.deque(maxlen=TAIL_LINES)


class Failure:
    """One failed attempt: which rank, how it ended, where the run was, its last output lines."""

    def __init__(self, rank: int, returncode: int, progress: Tuple[Optional[str], Optional[int]],
                 tail: List[str]) -> None:
        self.rank = rank
        self.returncode = returncode
        self.checkpoint, self.iteration = progress
        self.tail = tail

    def place(self) -> Tuple[int, Optional[str], Optional[int]]:
        return self.rank, self.checkpoint, self.iteration

    def where(self) -> str:
        at = "before its first logged iteration" if self.iteration is None else \
            f"after iteration {self.iteration} (the last in metrics.json)"
        return f"{at}; newest checkpoint: {self.checkpoint or 'none'}"

    def summary(self) -> str:
        return f"rank {self.rank} {describe_status(self.returncode)} {self.where()}"

    def last_lines(self) -> str:
        lines = "".join(f"    | {line.rstrip()}\n" for line in self.tail) or "    | (no output kept)\n"
        return f"  last lines of rank {self.rank}'s output:\n{lines}"


class RestartPolicy:
    """Counts restarts and tells a failure worth restarting from a deterministic one."""

    def __init__(self, max_restarts: int) -> None:
        if max_restarts < 0:
            raise ValueError(f"--max-restarts must be 0 or more, got {max_restarts}")
        self.max_restarts = max_restarts
        self.restarts = 0
        self.failures: List[Failure] = []

    def deterministic(self) -> bool:
        """The last two failures were the same rank at the same place (no progress between)."""
        if len(self.failures) < 2:
            return False
        last, before = self.failures[-1], self.failures[-2]
        return last.place() == before.place() and last.iteration is not None

    def verdict(self, failure: Failure) -> Optional[str]:
        """``None`` to restart, else why not (the launcher's last message)."""
        self.failures.append(failure)
        if self.deterministic():
            return (f"libai.launch: {failure.summary()}, the same place as the previous attempt: "
                    f"the failure is deterministic (no progress after {len(self.failures)} attempts); "
                    "not restarting again. Fix the cause (the last lines of its output are in "
                    f"{RESTART_LOG}), then start the run again with --resume")
        if self.restarts >= self.max_restarts:
            return (f"libai.launch: {failure.summary()}; no restarts left (--max-restarts "
                    f"{self.max_restarts}); start it again with --resume")
        return None


def record(output_dir: Optional[str], text: str) -> None:
    """Append ``text`` to ``<output_dir>/restarts.log`` (nothing when the dir is unknown)."""
    if not output_dir or not os.path.isdir(output_dir):
        return
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    with open(os.path.join(output_dir, RESTART_LOG), "a", encoding="utf-8") as f:
        f.write(f"[{stamp}] {text.rstrip()}\n")


def restart_entry(number: int, policy: RestartPolicy, failure: Failure, pause: float) -> str:
    """What ``restarts.log`` says about restart ``number``."""
    return (f"restart {number} of {policy.max_restarts}: {failure.summary()}; every rank ended and "
            f"started again with --resume after {pause:g} s\n{failure.last_lines()}")


def tail_of(path: str, lines: int = TAIL_LINES) -> List[bytes]:
    """The last ``lines`` lines of the file at ``path`` (a rank's redirected output)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            return f.read().splitlines(keepends=True)[-lines:]
    except OSError:
        return []


def decode(lines: List[bytes]) -> List[str]:
    return [line.decode("utf-8", "replace") for line in lines]

