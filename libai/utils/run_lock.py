"""One live run per output directory: rank 0 holds ``<output_dir>/run.lock`` for the run's life.

Two runs writing into one ``train.output_dir`` (a double submit, a retry while the first run
is still alive) interleave their ``metrics.json`` lines and overwrite each other's checkpoints,
and both report success. The lock turns the second start into an error that names the holder.

How the lock works (Linux, one host or a shared file system):

* The file is opened and ``flock``-ed (exclusive, non-blocking). The kernel drops a ``flock``
  when its holder dies, however it dies, so a lock that cannot be taken belongs to a live run.
* The holder writes one JSON record into it: ``pid``, ``host``, ``started`` (local ISO time),
  ``command`` and ``proc_start`` (the process's start time in clock ticks, which tells a
  recycled pid from the original process). The record is what the refusal message shows.
* A record left behind (the holder was killed before it could remove the file) is taken over
  with a warning when it names a process of *this* host that no longer runs. A record from
  another host cannot be checked from here; it is refused, and the message says to delete the
  file once that run has surely ended (file systems do not all carry ``flock`` across hosts).
* On release the file is removed; whoever opened it just before checks, after locking, that
  the path still names the file it locked (else it starts over on the new file).

In a multi-process run only rank 0 touches the file, and its outcome is broadcast, so every
rank refuses together instead of the others waiting in their first collective.
"""
import atexit
import contextlib
import datetime
import errno
import fcntl
import json
import logging
import os
import shlex
import socket
import sys
from dataclasses import asdict, dataclass
from typing import Dict, Iterator, Optional, Sequence

__all__ = ["LOCK_NAME", "LockHolder", "OutputDirInUse", "RunLock", "hold_output_dir"]

logger = logging.getLogger(__name__)

LOCK_NAME = "run.lock"


class OutputDirInUse(RuntimeError):
    """Another live run holds this output directory."""


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) an output directory: the record inside ``run.lock``."""

    pid: int
    host: str
    started: str
    command: str
    proc_start: Optional[int] = None

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host}, started {self.started}, command: {self.command}"

    def is_alive(self) -> Optional[bool]:
        """Whether the holder still runs: ``None`` when it is on another host (unknowable here)."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's live process
            pass
        current = process_start_ticks(self.pid)
        return self.proc_start is None or current is None or current == self.proc_start


def process_start_ticks(pid: int) -> Optional[int]:
    """A process's start time since boot, in clock ticks (``/proc/<pid>/stat`` field 22), or
    ``None`` where there is no ``/proc``. With the pid it names one process, even after the pid
    is reused."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return int(stat[stat.rindex(")") + 2:].split()[19])


def this_process(command: Optional[Sequence[str]] = None) -> LockHolder:
    """The record this process writes when it takes a lock."""
    return LockHolder(
        pid=os.getpid(),
        host=socket.gethostname(),
        started=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        command=shlex.join(list(command if command is not None else [sys.executable, *sys.argv])),
        proc_start=process_start_ticks(os.getpid()),
    )


def _parse(text: str) -> Optional[LockHolder]:
    try:
        record = json.loads(text)
        return LockHolder(int(record["pid"]), str(record["host"]), str(record["started"]),
                          str(record["command"]), record.get("proc_start"))
    except (ValueError, KeyError, TypeError):
        return None


def _read_all(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks).decode("utf-8", "replace")
        chunks.append(chunk)


class RunLock:
    """The lock of one output directory, taken by :meth:`acquire` and given back by :meth:`release`.

    A process may hold the locks of several directories; acquiring one it already holds is an
    error (two runs of one process into one directory are two writers too).
    """

    def __init__(self, output_dir: str, command: Optional[Sequence[str]] = None) -> None:
        self.output_dir = output_dir
        self.path = os.path.join(output_dir, LOCK_NAME)
        self.command = command
        self.holder: Optional[LockHolder] = None
        self.taken_over: Optional[LockHolder] = None
        self._fd: Optional[int] = None

    def _refusal(self, holder: Optional[LockHolder], why: str) -> OutputDirInUse:
        who = holder.describe() if holder else "a process whose record is not readable yet"
        return OutputDirInUse(
            f"train.output_dir {self.output_dir!r} belongs to another run ({why}): {who}. "
            f"Give this run another directory (train.output_dir=/a/new/dir) or wait until that run "
            f"ends; its lock is {self.path}"
        )

    def acquire(self) -> LockHolder:
        """Take the lock or raise :class:`OutputDirInUse` naming the holder; returns our record.

        A record of a dead process of this host is taken over (``self.taken_over`` names it)."""
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already held by this RunLock")
        for _ in range(10):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise OSError(e.errno, f"cannot lock {self.path} ({e.strerror}): its file system does "
                                           "not support flock; put train.output_dir on one that does") from e
                previous = _parse(_read_all(fd))
                os.close(fd)
                raise self._refusal(previous, "it is running") from None
            if not self._still_names(fd):  # the holder released (removed) it meanwhile
                os.close(fd)
                continue
            try:
                return self._claim(fd)
            except BaseException:
                os.close(fd)
                raise
        raise OutputDirInUse(f"could not take {self.path}: other runs keep creating and removing it")

    def _open(self) -> int:
        try:
            os.makedirs(self.output_dir, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise PermissionError(
                f"train.output_dir {self.output_dir!r} is not writable ({e.strerror}); choose another "
                "with train.output_dir=/a/writable/dir"
            ) from e

    def _still_names(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def _claim(self, fd: int) -> LockHolder:
        previous = _parse(_read_all(fd))
        if previous is not None:
            alive = previous.is_alive()
            if alive is None:
                raise self._refusal(previous, "its host is not this one, so whether it still runs "
                                              f"cannot be checked; delete {self.path} once it has ended")
            if alive:
                raise self._refusal(previous, "it is running")
            logger.warning(f"Taking over {self.path}: it was left by a run that no longer runs "
                           f"({previous.describe()})")
            self.taken_over = previous
        me = this_process(self.command)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (json.dumps(asdict(me)) + "\n").encode())
        os.fsync(fd)
        self._fd, self.holder = fd, me
        _HELD[self.path] = self
        return me

    def release(self) -> None:
        """Remove the lock file and let go of it (nothing to do when not held)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        _HELD.pop(self.path, None)
        try:
            if self._still_names(fd):
                os.remove(self.path)
        except OSError:
            pass  # the directory went away: nothing left to release
        finally:
            os.close(fd)


_HELD: Dict[str, RunLock] = {}


@atexit.register
def _release_all() -> None:
    """An interpreter that exits while holding a lock (``sys.exit`` in a hook) gives it back."""
    for lock in list(_HELD.values()):
        lock.release()


@contextlib.contextmanager
def hold_output_dir(output_dir: str, command: Optional[Sequence[str]] = None) -> Iterator[Optional[RunLock]]:
    """Own ``output_dir`` for the body of the ``with``: rank 0 takes its lock, every rank learns
    the outcome, and all of them raise the same error when it is refused.

    Yields the :class:`RunLock` on rank 0 and ``None`` elsewhere. The lock is given back when
    the body ends, by return or by exception; a process killed outright leaves a record that the
    next run on this host takes over.
    """
    from libai.utils import distributed as dist

    lock: Optional[RunLock] = None
    failure: Optional[BaseException] = None
    if dist.is_main_process():
        lock = RunLock(output_dir, command)
        try:
            lock.acquire()
        except Exception as e:  # every rank must hear of it, whatever it is
            failure, lock = e, None
    if dist.get_world_size() > 1:
        outcome = dist.broadcast_py_object(None if failure is None else (type(failure), str(failure)))
        # Rank 0 may still be finishing the broadcast when the others have their copy; a rank that
        # raised and exited at once could leave it there (and its own message unprinted).
        dist.synchronize()
        if outcome is not None and failure is None:
            failure = _same_error(*outcome, prefix="rank 0 refused the run: ")
    if failure is not None:
        raise failure
    try:
        yield lock
    finally:
        if lock is not None:
            lock.release()


def _same_error(kind: type, message: str, prefix: str) -> BaseException:
    """An exception of rank 0's type (or a RuntimeError, if that type needs more arguments)."""
    try:
        return kind(prefix + message)
    except Exception:
        return RuntimeError(f"{prefix}{kind.__name__}: {message}")
