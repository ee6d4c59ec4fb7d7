"""Let hooks see the batch the model receives, without changing how it is read.

Hooks run around ``run_step`` and never see its batch. Some visuals need it (the image grid of
:class:`TensorboardVisuals`, the output shapes of :class:`ModelSummaryHook` in Graph mode). A
:class:`BatchTap` wraps the trainer's ``get_batch`` (the function ``DefaultTrainer.run_step``
hands to its step runner) with one that keeps a reference to what it returns; the loader, the
placement and the batch itself are untouched, so training computes exactly what it would
without the tap. One tap serves every hook of a trainer (:func:`tap_batches`).
"""
from typing import Any, Callable, Dict, Optional

__all__ = ["BatchTap", "tap_batches", "untap_batches"]

_ATTRIBUTE = "batch_tap"  # public: hooks read it as trainer.batch_tap


class BatchTap:
    """Holds the model inputs of the latest ``get_batch`` call (``latest``; ``None`` before
    the first). With gradient accumulation that is the last micro-batch of the step."""

    def __init__(self, get_batch: Callable[..., Dict[str, Any]]) -> None:
        self.wrapped = get_batch
        self.latest: Optional[Dict[str, Any]] = None
        self.users = 0
        self.replaced_instance_attribute = False

    def __call__(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        inputs = self.wrapped(*args, **kwargs)
        self.latest = inputs
        return inputs


def tap_batches(trainer: Any) -> Optional[BatchTap]:
    """The trainer's tap, installed on first use; ``None`` when the trainer has no
    ``get_batch`` (a custom loop: the hooks then go without the batch). Pair every call with
    :func:`untap_batches`."""
    tap = getattr(trainer, _ATTRIBUTE, None)
    if tap is None:
        get_batch = getattr(trainer, "get_batch", None)
        if get_batch is None:
            return None
        tap = BatchTap(get_batch)
        tap.replaced_instance_attribute = "get_batch" in vars(trainer)
        setattr(trainer, _ATTRIBUTE, tap)
        trainer.get_batch = tap  # an instance attribute, shadowing the class's method
    tap.users += 1
    return tap


def untap_batches(trainer: Any) -> None:
    """Release one :func:`tap_batches`; the last release restores the trainer's ``get_batch``."""
    tap = getattr(trainer, _ATTRIBUTE, None)
    if tap is None:
        return
    tap.users -= 1
    if tap.users <= 0:
        delattr(trainer, _ATTRIBUTE)
        if tap.replaced_instance_attribute:
            trainer.get_batch = tap.wrapped
        else:
            del trainer.get_batch
        tap.latest = None
