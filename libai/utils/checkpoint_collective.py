"""How the ranks of a multi-process run agree during a save or a load.

Rank 0 alone touches the disk; :func:`decide_on_rank0` runs a decision there (is this a
checkpoint, which format, which is the newest) and gives every rank its result, or its error,
so that all ranks raise together instead of some of them hanging. :func:`all_gather_objects`
collects a picklable object from every rank (per-rank state such as RNG streams).
"""
import pickle
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
import oneflow as flow

from libai.utils import distributed as dist
from libai.utils.checkpoint_files import CheckpointError

__all__ = ["all_gather_objects", "decide_on_rank0"]


def decide_on_rank0(fn: Callable[[], Any], collective: bool) -> Any:
    """Run ``fn`` on rank 0 and give every rank its result, or its error (``collective=False``,
    a one-process run: just call it)."""
    if not collective:
        return fn()
    outcome: Tuple[bool, Any] = (True, None)
    error: Optional[BaseException] = None
    if dist.is_main_process():
        try:
            outcome = (True, fn())
        except Exception as exc:  # re-raised below on every rank
            error = exc
            outcome = (False, f"{type(exc).__name__} on rank 0: {exc}")
    ok, value = all_gather_objects(outcome)[0]
    if error is not None:
        raise error
    if not ok:
        raise CheckpointError(value)
    return value


def all_gather_objects(obj: Any) -> List[Any]:
    """Every rank's picklable ``obj``, in rank order (a collective over the whole world)."""
    world = dist.get_world_size()
    everyone = flow.placement("cpu", ranks=list(range(world)))
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    size = flow.tensor([data.size], dtype=flow.int64).to_global(everyone, flow.sbp.split(0))
    sizes = size.to_global(everyone, flow.sbp.broadcast).to_local().numpy().tolist()
    padded = np.zeros(max(sizes), dtype=np.uint8)
    padded[: data.size] = data
    pieces = flow.tensor(padded).to_global(everyone, flow.sbp.split(0))
    rows = pieces.to_global(everyone, flow.sbp.broadcast).to_local().numpy().reshape(world, -1)
    return [pickle.loads(rows[r, : sizes[r]].tobytes()) for r in range(world)]
