"""Hang detection: a thread on every rank that notices a phase taking far too long.

A rank stuck in a collective waits for ever without a word, and so does every rank waiting for
it. The trainer marks the phases it knows (a training step, an evaluation batch, a checkpoint
save) with :meth:`Watchdog.begin`/:meth:`Watchdog.end`; a daemon thread wakes every few seconds
and compares the phase in progress with that phase's recent durations:

* **late**: longer than ``factor`` x the median of the last ``window`` durations of the same
  phase, and longer than ``floor`` seconds. The rank writes the Python stacks of all its threads
  (``faulthandler``) to ``output_dir/watchdog/stacks-rank<r>.txt`` and logs which ranks are late
  and where. A phase with fewer than 3 past durations (the first steps, which compile) is never
  judged late; only the timeout applies to it.
* **timed out**: in the same phase for more than ``timeout`` seconds. The rank logs where every
  rank was, flushes its logs and ends with ``os._exit(EXIT_CODE)``: a hung collective cannot be
  interrupted from Python, and a non-zero exit is what lets the launcher's restarts take over.

Ranks of a multi-process run learn about each other through small heartbeat files, ``output_dir/watchdog/
heartbeat-rank<r>.json`` (a one-process run writes none: ``watchdog/`` then appears only with stacks), each rewritten by its own rank's thread at every wake-up; a late rank's
file says so, and every other rank then writes its stacks too. No collective is used: a
collective is what hangs. (Ranks on other machines are seen only if ``output_dir`` is shared.)

What a step pays: ``begin`` and ``end`` read the clock and store a tuple; no system call, no
lock, no file. Settings: ``train.watchdog`` (configs/common/train.py), overridden by
``$LIBAI_WATCHDOG``: ``0`` turns it off, ``timeout=600,floor=30`` sets keys.
"""
import contextlib
import faulthandler
import json
import logging
import os
import statistics
import threading
import time
from collections import deque
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Tuple

__all__ = ["ENV", "EXIT_CODE", "NO_WATCHDOG", "Watchdog", "WatchdogSettings"]

logger = logging.getLogger(__name__)

ENV = "LIBAI_WATCHDOG"
EXIT_CODE = 124  # as timeout(1): the run was ended because a phase outlasted its limit
FOLDER = "watchdog"
MIN_HISTORY = 3
_OFF = {"0", "off", "false", "no"}


@dataclass(frozen=True)
class WatchdogSettings:
    """``train.watchdog``: see configs/common/train.py for each field's meaning."""

    enabled: bool = True
    factor: float = 10.0
    floor: float = 300.0
    timeout: float = 1800.0
    window: int = 50

    @classmethod
    def from_config(cls, node: Any, environ: Optional[Dict[str, str]] = None) -> "WatchdogSettings":
        """The settings of ``train.watchdog`` with ``$LIBAI_WATCHDOG`` applied over them."""
        settings = cls(**{f.name: node[f.name] for f in fields(cls) if node.get(f.name) is not None})
        raw = (os.environ if environ is None else environ).get(ENV, "").strip()
        if not raw:
            return settings.checked()
        if raw.lower() in _OFF:
            return replace(settings, enabled=False)
        changes: Dict[str, Any] = {}
        kinds = {f.name: f.type for f in fields(cls)}
        for item in raw.split(","):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in kinds:
                raise ValueError(f"{ENV}={raw!r}: {item!r} is not key=value with a key among "
                                 f"{sorted(kinds)} (or use {ENV}=0 to turn the watchdog off)")
            value = value.strip()
            changes[key] = (value.lower() not in _OFF) if key == "enabled" else (
                int(value) if key == "window" else float(value))
        return replace(settings, **changes).checked()

    def checked(self) -> "WatchdogSettings":
        if self.factor <= 1 or self.floor < 0 or self.timeout <= 0 or self.window < MIN_HISTORY:
            raise ValueError(f"train.watchdog: need factor > 1, floor >= 0, timeout > 0 and window >= "
                             f"{MIN_HISTORY}; got {self}")
        return self

    @property
    def poll(self) -> float:
        """Seconds between the thread's wake-ups: a quarter of the shortest limit, 0.05 to 10."""
        return min(10.0, max(0.05, min(self.floor or self.timeout, self.timeout) / 4))


class _NoWatchdog:
    """What a trainer without a watchdog holds: every mark is free."""

    def start(self) -> "_NoWatchdog":
        return self

    def stop(self) -> None:
        pass

    def begin(self, phase: str, index: int) -> None:
        pass

    def end(self) -> None:
        pass

    def phase(self, phase: str, index: int) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def watch(self, iterable: Any, phase: str) -> Any:
        return iterable


NO_WATCHDOG = _NoWatchdog()


class Watchdog(_NoWatchdog):
    """One rank's watchdog (see the module docstring). ``clock`` and ``exit`` are injectable for
    tests; ``start`` launches the thread, ``stop`` ends it."""

    def __init__(self, settings: WatchdogSettings, output_dir: str, rank: int = 0,
                 world_size: int = 1, clock: Callable[[], float] = time.monotonic,
                 exit: Callable[[int], Any] = os._exit) -> None:
        self.settings = settings
        self.folder = os.path.join(output_dir, FOLDER)
        self.rank, self.world_size = rank, world_size
        self._clock, self._exit = clock, exit
        self._current: Optional[Tuple[str, int, float]] = None
        self._durations: Dict[str, Deque[float]] = {}
        self._dumped_for: Optional[Tuple[str, int, float]] = None
        self._dumped_peer = False
        self._own_beat: Optional[dict] = None  # this rank's latest heartbeat (a file only if world > 1)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.stacks_path = os.path.join(self.folder, f"stacks-rank{rank}.txt")

    # ------------------------------------------------------------------ marks (the hot path)
    def begin(self, phase: str, index: int) -> None:
        self._current = (phase, index, self._clock())

    def end(self) -> None:
        current, self._current = self._current, None
        if current is not None:
            past = self._durations.get(current[0])
            if past is None:
                past = self._durations[current[0]] = deque(maxlen=self.settings.window)
            past.append(self._clock() - current[2])

    @contextlib.contextmanager
    def phase(self, phase: str, index: int) -> Iterator[None]:
        self.begin(phase, index)
        try:
            yield
        finally:
            self.end()

    def watch(self, iterable: Any, phase: str) -> "_Watched":
        """``iterable`` with each item a phase (from asking for it until asking for the next)."""
        return _Watched(iterable, self, phase)

    # ------------------------------------------------------------------ the thread
    def start(self) -> "Watchdog":
        if self.world_size > 1:  # a lone rank has no one to tell: its folder appears only with stacks
            os.makedirs(self.folder, exist_ok=True)
        self._stop.clear()
        self._beat(None, 0.0, False)
        self._thread = threading.Thread(target=self._run, name=f"libai-watchdog-{self.rank}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._beat(None, 0.0, False, finished=True)

    def _run(self) -> None:
        while not self._stop.wait(self.settings.poll):
            try:
                self.check()
            except Exception:  # the watchdog must never be what kills a healthy run
                logger.exception("The watchdog's check failed; it keeps watching")

    def limit(self, phase: str) -> float:
        """Seconds after which ``phase`` is late: the timeout until it has a history."""
        past = self._durations.get(phase)
        if past is None or len(past) < MIN_HISTORY:
            return self.settings.timeout
        return max(self.settings.floor, self.settings.factor * statistics.median(past))

    def _limit_text(self, phase: str) -> str:
        past = self._durations.get(phase)
        if past is None or len(past) < MIN_HISTORY:
            return f"the timeout, {self.settings.timeout:.0f} s (no history of {phase} yet)"
        return (f"{self.limit(phase):.1f} s ({self.settings.factor:g}x its median of "
                f"{statistics.median(past):.2f} s, at least {self.settings.floor:g} s)")

    def check(self) -> None:
        """One wake-up: write the heartbeat, dump stacks when this or another rank is late, end
        the process when the phase in progress outlasted the timeout."""
        current = self._current
        elapsed = self._clock() - current[2] if current else 0.0
        late = current is not None and elapsed > self.limit(current[0])
        self._beat(current, elapsed, late)
        peers = self.peers()
        late_peers = [p for p in peers if p.get("late") and p["rank"] != self.rank]
        if late and self._dumped_for != current:
            self._dumped_for = current
            self._dump(f"rank {self.rank} is late: {_where(current, elapsed)}")
            logger.warning("Watchdog: %s, longer than %s. Stacks in %s. Late ranks: %s",
                           _where(current, elapsed), self._limit_text(current[0]), self.stacks_path,
                           _late_list(peers) or f"rank {self.rank}")
        if not late_peers:
            self._dumped_peer = False
        elif not late and not self._dumped_peer:
            self._dumped_peer = True
            self._dump(f"rank(s) {', '.join(str(p['rank']) for p in late_peers)} late; "
                       f"rank {self.rank}: {_where(current, elapsed)}")
            logger.warning("Watchdog: %s late; this rank (%d) is %s. Stacks in %s",
                           _late_list(late_peers), self.rank, _where(current, elapsed), self.stacks_path)
        if current is not None and elapsed > self.settings.timeout:
            self._time_out(current, elapsed, peers)

    def _time_out(self, current: Tuple[str, int, float], elapsed: float, peers: List[dict]) -> None:
        if self._dumped_for != current:
            self._dump(f"rank {self.rank} timed out: {_where(current, elapsed)}")
        ranks = "; ".join(f"rank {p['rank']}: {p['where']}" + (" (late)" if p.get("late") else "")
                          for p in peers) or f"rank {self.rank}: {_where(current, elapsed)}"
        logger.error("Watchdog: rank %d has been in %s for %.0f s, more than train.watchdog.timeout "
                     "(%.0f s): ending the run (exit %d) so that it can be restarted. Where each rank "
                     "was: %s. Stacks of every rank in %s", self.rank, current[0], elapsed,
                     self.settings.timeout, EXIT_CODE, ranks, self.folder)
        for handler in logging.root.handlers + logger.handlers:
            with contextlib.suppress(Exception):
                handler.flush()
        self._exit(EXIT_CODE)

    # ------------------------------------------------------------------ files
    def _beat(self, current: Optional[Tuple[str, int, float]], elapsed: float, late: bool,
              finished: bool = False) -> None:
        where = "finished" if finished else _where(current, elapsed)
        beat = {"rank": self.rank, "pid": os.getpid(), "where": where, "late": late,
                "updated": time.time()}
        self._own_beat = beat
        if self.world_size == 1:
            return
        path = os.path.join(self.folder, f"heartbeat-rank{self.rank}.json")
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(beat, f)
        os.replace(tmp, path)

    def peers(self) -> List[dict]:
        """Every rank's latest heartbeat (this one's included), by rank; a rank silent for more
        than three wake-ups (and 5 s) is marked so (its process may be frozen, or gone) and not counted
        as late."""
        beats = []
        for rank in range(self.world_size):
            if rank == self.rank and self._own_beat is not None:
                beats.append(dict(self._own_beat))
                continue
            try:
                with open(os.path.join(self.folder, f"heartbeat-rank{rank}.json")) as f:
                    beat = json.load(f)
            except (OSError, ValueError):
                beat = {"rank": rank, "where": "no heartbeat file yet", "late": False, "updated": None}
            age = time.time() - beat["updated"] if beat.get("updated") else None
            if age is not None and age > max(3 * self.settings.poll, 5.0) and beat["where"] != "finished":
                # frozen, gone, or left by an earlier attempt (before a restart): its "late" is
                # not news, and where it was is only a last known place
                beat["where"] += f" (no heartbeat for {age:.0f} s)"
                beat["late"] = False
            beats.append(beat)
        return beats

    def _dump(self, header: str) -> None:
        os.makedirs(self.folder, exist_ok=True)
        with open(self.stacks_path, "a") as f:
            f.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}: {header}\n")
            f.flush()
            faulthandler.dump_traceback(file=f, all_threads=True)
            f.write("\n")


class _Watched:
    """An iterable whose items are watchdog phases; anything else is the wrapped object's
    (``len``, ``dataset``...), so code that inspects a data loader still sees one."""

    def __init__(self, iterable: Any, watchdog: Watchdog, phase: str) -> None:
        self._iterable, self._watchdog, self._phase = iterable, watchdog, phase

    def __iter__(self) -> Iterator[Any]:
        iterator, index = iter(self._iterable), 0
        try:
            while True:
                self._watchdog.begin(self._phase, index)
                try:
                    item = next(iterator)
                except StopIteration:
                    return
                yield item
                index += 1
        finally:
            self._watchdog.end()

    def __len__(self) -> int:
        return len(self._iterable)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._iterable, name)


def _where(current: Optional[Tuple[str, int, float]], elapsed: float) -> str:
    if current is None:
        return "between phases"
    return f"{current[0]} {current[1]} for {elapsed:.1f} s"


def _late_list(beats: Iterable[dict]) -> str:
    return ", ".join(f"rank {b['rank']} ({b['where']})" for b in beats if b.get("late"))
