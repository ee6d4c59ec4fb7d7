"""Where training metrics go while a run is in progress: the event storage.

Any code running inside a training loop (the trainer, a hook, the model's ``forward``) can call
``get_event_storage().put_scalar("name", value)``. Writers (:mod:`libai.utils.writers`: the
``metrics.json`` writer, the console printer, TensorBoard) read the storage every
``log_period`` iterations. The storage sits between them so that the code producing a number
does not need to know who consumes it, and so that reading a device tensor (which waits for the
device) happens once per log period rather than once per put. It knows nothing of its readers:
the writers import this module, never the other way round.

Storages form a stack: ``with EventStorage(start_iter) as storage:`` makes ``storage`` current
for the code inside. Tests reset the stack with :func:`reset_event_storages`.
"""
import numbers
from typing import Any, Dict, List, Optional, Tuple

from libai.utils.history import HistoryBuffer, to_float

__all__ = ["EventStorage", "get_event_storage", "has_event_storage", "reset_event_storages"]

_STORAGE_STACK: List["EventStorage"] = []


def get_event_storage() -> "EventStorage":
    """The innermost active :class:`EventStorage`; an error outside one."""
    if not _STORAGE_STACK:
        raise RuntimeError(
            "get_event_storage() was called outside any EventStorage. It is only available while "
            "a trainer runs (DefaultTrainer.train() opens one); in your own loop or a test, wrap "
            "the code in `with EventStorage(start_iter=0) as storage: ...`"
        )
    return _STORAGE_STACK[-1]


def has_event_storage() -> bool:
    """Whether some :class:`EventStorage` is active (for code that logs only when one is)."""
    return bool(_STORAGE_STACK)


def reset_event_storages() -> None:
    """Forget every active storage (for tests that leave a ``with`` block by an exception)."""
    _STORAGE_STACK.clear()


class EventStorage:
    """Named scalar histories for one training run, indexed by iteration.

    Args:
        start_iter: the iteration the run starts (or resumes) at; ``storage.iter`` starts here.
        max_history: how many values each history keeps for medians and averages.
        checkpoint_history: how many of those :meth:`state_dict` saves per scalar, so that a
            checkpoint stays small.
    """

    def __init__(
        self, start_iter: int = 0, max_history: int = 10000, checkpoint_history: int = 100
    ) -> None:
        self._iter = int(start_iter)
        self.start_iter = int(start_iter)  # writers drop what an earlier attempt logged from here on
        self._max_history = int(max_history)
        self._checkpoint_history = int(checkpoint_history)
        self._histories: Dict[str, HistoryBuffer] = {}
        self._smoothing_hints: Dict[str, bool] = {}
        self._seq = 0  # bumped on every put; writers remember the last one they saw

    # ------------------------------------------------------------------ context
    def __enter__(self) -> "EventStorage":
        _STORAGE_STACK.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if _STORAGE_STACK and _STORAGE_STACK[-1] is self:
            _STORAGE_STACK.pop()
        elif self in _STORAGE_STACK:
            _STORAGE_STACK.remove(self)

    # ------------------------------------------------------------------ iteration
    @property
    def iter(self) -> int:
        """The current iteration; scalars put without ``cur_iter`` belong to it."""
        return self._iter

    @iter.setter
    def iter(self, value: int) -> None:
        self._iter = int(value)

    @property
    def iteration(self) -> int:
        """Alias of :attr:`iter`."""
        return self._iter

    def step(self) -> None:
        """Advance to the next iteration."""
        self._iter += 1

    @property
    def seq(self) -> int:
        """How many puts this storage has seen: writers use it to find what is new."""
        return self._seq

    # ------------------------------------------------------------------ putting
    def put_scalar(
        self, name: str, value: Any, smoothing_hint: bool = True, cur_iter: Optional[int] = None
    ) -> None:
        """Record ``value`` for ``name`` at ``cur_iter`` (default: the current iteration).

        ``value`` may be a Python number, a NumPy scalar or a one-element OneFlow tensor; a
        tensor is detached and kept as is until a writer reads it, so a put never waits for
        the device. ``smoothing_hint`` tells writers to show a median over their window (right
        for noisy per-step values such as losses and times) rather than the latest value (right
        for the learning rate or an evaluation result).

        Without ``cur_iter`` the value is one point of a per-step series: writers write its
        latest (or smoothed) value once per log period. With an explicit ``cur_iter`` it is a
        record of that iteration, and writers write every such record, under that iteration,
        even if several arrive between two writes. Put evaluation results this way:
        ``put_scalar("Acc@1", 81.2, smoothing_hint=False, cur_iter=999)``.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"put_scalar needs a non-empty string name, got {name!r}")
        stored = _checked_scalar(name, value)
        hint = bool(smoothing_hint)
        known = self._smoothing_hints.setdefault(name, hint)
        if known != hint:
            raise ValueError(
                f"scalar {name!r} was put with smoothing_hint={known} before and now with "
                f"smoothing_hint={hint}; use one value for a given name"
            )
        history = self._histories.get(name)
        if history is None:
            history = self._histories[name] = HistoryBuffer(self._max_history)
        self._seq += 1
        iteration = self._iter if cur_iter is None else int(cur_iter)
        history.update(stored, iteration, self._seq, is_record=cur_iter is not None)

    def put_scalars(
        self, *, smoothing_hint: bool = True, cur_iter: Optional[int] = None, **kwargs: Any
    ) -> None:
        """``put_scalar`` for each keyword: ``storage.put_scalars(loss_a=1.0, loss_b=t)``."""
        for name, value in kwargs.items():
            self.put_scalar(name, value, smoothing_hint=smoothing_hint, cur_iter=cur_iter)

    # ------------------------------------------------------------------ reading
    def history(self, name: str) -> HistoryBuffer:
        """The :class:`HistoryBuffer` of ``name``."""
        history = self._histories.get(name)
        if history is None:
            known = ", ".join(sorted(self._histories)) or "none yet"
            raise KeyError(f"no scalar named {name!r} has been put; known scalars: {known}")
        return history

    def has_history(self, name: str) -> bool:
        return name in self._histories

    def histories(self) -> Dict[str, HistoryBuffer]:
        """Every history by name (a copy of the mapping, not of the buffers)."""
        return dict(self._histories)

    def smoothing_hint(self, name: str) -> bool:
        """The smoothing hint ``name`` was put with."""
        self.history(name)
        return self._smoothing_hints[name]

    def latest(self) -> Dict[str, Tuple[float, int]]:
        """``name -> (latest value, iteration it was put at)`` for every scalar."""
        return {n: (h.latest(), h.latest_iter()) for n, h in self._histories.items()}

    def latest_with_smoothing_hint(self, window_size: int = 20) -> Dict[str, Tuple[float, int]]:
        """Like :meth:`latest`, but scalars put with ``smoothing_hint=True`` give the median of
        their last ``window_size`` values."""
        result = {}
        for name, history in self._histories.items():
            if self._smoothing_hints[name]:
                value = history.median(window_size)
            else:
                value = history.latest()
            result[name] = (value, history.latest_iter())
        return result

    def scalars_since(
        self, seq: int, window_size: int = 20
    ) -> Tuple[Dict[int, Dict[str, float]], int]:
        """What was put after sequence number ``seq``, grouped by iteration.

        Every scalar put since ``seq`` contributes its latest value (the median over
        ``window_size`` if smoothed) at its latest iteration, so a per-step series gives one
        value per log period. Records (puts with an explicit ``cur_iter``) also contribute
        every earlier value since ``seq`` under their own iteration.
        Returns ``({iteration: {name: value}}, current seq)``; pass the latter back next time.
        """
        groups: Dict[int, Dict[str, float]] = {}
        for name, history in self._histories.items():
            if history.latest_seq() <= seq:
                continue
            for value, iteration, _, is_record in history.entries_after(seq)[:-1]:
                if is_record:
                    groups.setdefault(iteration, {})[name] = value
            if self._smoothing_hints[name]:
                latest = history.median(window_size)
            else:
                latest = history.latest()
            groups.setdefault(history.latest_iter(), {})[name] = latest
        return {it: groups[it] for it in sorted(groups)}, self._seq

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> Dict[str, Any]:
        """The iteration and the last ``checkpoint_history`` values of each scalar."""
        return {
            "iter": self._iter,
            "histories": {
                name: dict(
                    history.state_dict(self._checkpoint_history),
                    smoothing_hint=self._smoothing_hints[name],
                )
                for name, history in self._histories.items()
            },
        }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`; restored values are not written again by writers."""
        self._iter = int(state["iter"])
        self._histories.clear()
        self._smoothing_hints.clear()
        for name, saved in state["histories"].items():
            history = HistoryBuffer(self._max_history)
            history.load_state_dict(saved)
            self._histories[name] = history
            self._smoothing_hints[name] = bool(saved.get("smoothing_hint", True))


def _checked_scalar(name: str, value: Any) -> Any:
    """A float, or a detached one-element tensor that a writer on this rank can read later.

    Checks only metadata (shape, placement, SBP), so nothing here waits for the device.
    """
    if isinstance(value, bool) or isinstance(value, numbers.Number):
        return float(value)
    if hasattr(value, "detach") and hasattr(value, "numel"):
        return _checked_tensor(name, value)
    if hasattr(value, "item") and getattr(value, "size", 1) == 1:  # NumPy scalar or 1-element array
        return to_float(value)
    raise TypeError(
        f"put_scalar({name!r}, ...) takes a number, a NumPy scalar or a one-element OneFlow "
        f"tensor, got {type(value).__name__}"
    )


def _checked_tensor(name: str, tensor: Any) -> Any:
    if getattr(tensor, "is_lazy", False):
        raise ValueError(
            f"put_scalar({name!r}, ...) got a lazy tensor from inside an nn.Graph build; its value "
            "does not exist yet. Return it from the graph and put the returned tensor instead."
        )
    if tensor.numel() != 1:
        raise ValueError(
            f"put_scalar({name!r}, ...) takes one number but got a tensor of shape "
            f"{tuple(tensor.shape)}; reduce it first (e.g. .mean())"
        )
    if tensor.is_global:
        import oneflow as flow  # only reached with OneFlow tensors

        broadcast = all(s == flow.sbp.broadcast for s in tensor.sbp)
        here = flow.env.get_rank() in tensor.placement.ranks.flatten().tolist()
        if not (broadcast and here):
            raise ValueError(
                f"put_scalar({name!r}, ...) got a global tensor with sbp {tensor.sbp} on ranks "
                f"{tensor.placement.ranks.flatten().tolist()}, which this rank "
                f"({flow.env.get_rank()}) cannot read without a collective. Make it a full local "
                "value on every rank first: libai.utils.distributed.ttol(tensor)"
            )
    return tensor.detach()

