"""A bounded history of one scalar, whose values may still be device tensors.

Training code puts a loss every iteration, but writers read it only every ``log_period``
iterations. Turning a OneFlow tensor into a Python float (``.item()``) waits for the device to
finish, so doing it at put time would add a host-device sync to every step. A
:class:`HistoryBuffer` therefore keeps tensors as they are and converts them the first time
anything reads the buffer; after that they are plain floats.
"""
import math
import numbers
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Tuple

import oneflow as flow

__all__ = ["HistoryBuffer", "to_float"]


def to_float(value: Any) -> float:
    """A Python float from a number, a NumPy scalar or a one-element (local or readable global)
    OneFlow tensor. This is where a device tensor is finally synchronised."""
    if isinstance(value, float):
        return value
    if isinstance(value, numbers.Number):
        return float(value)
    if getattr(value, "is_global", False):
        # Validated at put time: broadcast, and this rank is in the placement.
        value = value.to_local()
    if hasattr(value, "item"):
        return float(value.item())
    raise TypeError(f"cannot convert {type(value).__name__} to a float")


def to_floats(values: List[Any]) -> List[float]:
    """:func:`to_float` for many values, reading all tensors in one device transfer (a log write
    then waits on OneFlow once instead of once per logged iteration)."""
    tensors = [i for i, v in enumerate(values) if isinstance(v, flow.Tensor)]
    out = list(values)
    if len(tensors) > 1:
        try:
            local = [values[i].to_local() if values[i].is_global else values[i] for i in tensors]
            stacked = flow.stack([t.reshape(()) for t in local]).numpy()
            for i, v in zip(tensors, stacked):
                out[i] = float(v)
        except (RuntimeError, ValueError):
            out = list(values)  # mixed devices or dtypes: fall back to one read each
    return [to_float(v) for v in out]


class HistoryBuffer:
    """The last ``max_length`` values of a scalar with their iterations, plus running totals.

    ``global_avg`` covers every value ever added (also those that fell out of the window), so
    it is exact for averages over a whole run. Each entry also carries a sequence number given by
    the storage, so writers can ask for "what is new since I last wrote".
    """

    def __init__(self, max_length: int = 10000) -> None:
        if max_length < 1:
            raise ValueError(f"HistoryBuffer max_length must be >= 1, got {max_length}")
        self._max_length = max_length
        # Entries are [value, iteration, seq, is_record]; value is a float or a not yet
        # converted tensor; is_record marks a value put for an explicit iteration.
        self._data: Deque[List[Any]] = deque()
        self._pending = 0  # how many of the newest entries still hold tensors
        self._global_sum = 0.0
        self._count = 0

    # ------------------------------------------------------------------ writing
    def update(self, value: Any, iteration: int, seq: int = 0, is_record: bool = False) -> None:
        """Append ``value`` (float or tensor) seen at ``iteration``. ``seq`` and ``is_record``
        are bookkeeping for the storage's writers (see :meth:`entries_after`)."""
        is_float = isinstance(value, float)
        if not is_float and self._pending == 0:
            self._pending = 1
        elif self._pending:
            self._pending += 1
        self._data.append([value, int(iteration), int(seq), bool(is_record)])
        self._count += 1
        if is_float and not self._pending:
            self._global_sum += value
        if len(self._data) > self._max_length:
            self._evict_oldest()

    def _evict_oldest(self) -> None:
        entry = self._data.popleft()
        if self._pending > len(self._data):
            # The evicted entry was never read: count it now (a sync only when a full buffer
            # was never read, which a writer-driven run does not do).
            self._pending -= 1
            self._global_sum += to_float(entry[0])

    def _materialize(self) -> None:
        """Convert the pending tensors, oldest first, and add them to the running sum."""
        if not self._pending:
            return
        n = len(self._data)
        entries = [self._data[i] for i in range(n - self._pending, n)]
        for entry, value in zip(entries, to_floats([e[0] for e in entries])):
            entry[0] = value
            self._global_sum += value
        self._pending = 0

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self._data)

    def latest(self) -> float:
        """The newest value."""
        self._require_values("latest")
        self._materialize()
        return self._data[-1][0]

    def latest_iter(self) -> int:
        """The iteration of the newest value."""
        self._require_values("latest_iter")
        return self._data[-1][1]

    def latest_seq(self) -> int:
        """The sequence number of the newest value."""
        return self._data[-1][2] if self._data else -1

    def median(self, window: int) -> float:
        """Median of the last ``window`` values: robust to the odd slow or spiky step."""
        values = sorted(self._tail(window, "median"))
        mid = len(values) // 2
        if len(values) % 2:
            return values[mid]
        return (values[mid - 1] + values[mid]) / 2.0

    def avg(self, window: int) -> float:
        """Mean of the last ``window`` values."""
        values = self._tail(window, "avg")
        return math.fsum(values) / len(values)

    def global_avg(self) -> float:
        """Mean of every value ever added."""
        self._require_values("global_avg")
        self._materialize()
        return self._global_sum / self._count

    def values(self) -> List[Tuple[float, int]]:
        """Every kept ``(value, iteration)`` pair, oldest first."""
        self._materialize()
        return [(e[0], e[1]) for e in self._data]

    def entries_after(self, seq: int) -> List[Tuple[float, int, int, bool]]:
        """``(value, iteration, seq, is_record)`` of the kept entries newer than ``seq``."""
        newer: List[List[Any]] = []
        for entry in reversed(self._data):
            if entry[2] <= seq:
                break
            newer.append(entry)
        if newer:
            self._materialize()
        return [(e[0], e[1], e[2], e[3]) for e in reversed(newer)]

    def _tail(self, window: int, what: str) -> List[float]:
        if window < 1:
            raise ValueError(f"{what} window must be >= 1, got {window}")
        self._require_values(what)
        self._materialize()
        start = max(0, len(self._data) - window)
        return [self._data[i][0] for i in range(start, len(self._data))]

    def _require_values(self, what: str) -> None:
        if not self._data:
            raise IndexError(f"HistoryBuffer.{what}() called on an empty history")

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self, max_entries: Optional[int] = None) -> Dict[str, Any]:
        """The last ``max_entries`` values (all kept ones when ``None``) and the running totals."""
        self._materialize()
        kept = list(self._data)
        if max_entries is not None:
            kept = kept[max(0, len(kept) - max_entries):]
        return {
            "values": [(e[0], e[1]) for e in kept],
            "global_sum": self._global_sum,
            "count": self._count,
        }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved. Restored entries count as already written."""
        self._data.clear()
        self._pending = 0
        for value, iteration in state["values"][-self._max_length:]:
            self._data.append([float(value), int(iteration), -1, False])
        self._global_sum = float(state["global_sum"])
        self._count = int(state["count"])
