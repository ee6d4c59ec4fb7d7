"""The one place where full NumPy weights become a model's (possibly sharded) tensors, and back.

Each tensor is placed exactly like the model's own parameter: same placement (pipeline stage),
same SBP (tensor-parallel split). In a one-process layout that is a copy. In a multi-process
run only rank 0 has read the checkpoint: it builds the tensor, OneFlow broadcasts it from
rank 0 (``placement=[0]``) to the parameter's placement and re-boxes it to the parameter's
SBP, so each rank keeps only its shard and no other rank ever reads or holds the whole file.
Small Python objects (the outcome of the checks) travel the same way, as bytes.
"""
import pickle
from typing import Any, Dict, Mapping, Optional

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.utils.distributed import get_rank, get_world_size

__all__ = ["assign_state", "broadcast_object", "gather_state", "state_shapes"]


def state_shapes(model: nn.Module) -> Dict[str, tuple]:
    """Logical shape of every tensor in ``model.state_dict()`` (what a checkpoint must fill)."""
    return {name: tuple(t.shape) for name, t in model.state_dict().items()}


def _world_placement(device_type: str) -> flow.placement:
    return flow.placement(device_type, ranks=list(range(get_world_size())))


def _from_rank0(array: Optional[np.ndarray], dtype: flow.dtype, device_type: str) -> flow.Tensor:
    """A broadcast global tensor on ``ranks=[0]`` holding rank 0's ``array``."""
    if get_rank() == 0:
        local = flow.tensor(array, dtype=dtype)
    else:
        local = flow.empty(0, dtype=dtype)  # not read: OneFlow takes shape and data from rank 0
    return local.to(device_type).to_global(
        placement=flow.placement(device_type, ranks=[0]), sbp=flow.sbp.broadcast
    )


def broadcast_object(obj: Any, device_type: str = "cpu") -> Any:
    """Rank 0's ``obj`` on every rank (pickled; meant for small things like a report)."""
    if get_world_size() == 1:
        return obj
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8) if get_rank() == 0 else None
    tensor = _from_rank0(data, flow.uint8, device_type)
    local = tensor.to_global(placement=_world_placement(device_type), sbp=flow.sbp.broadcast)
    return pickle.loads(local.to_local().numpy().tobytes())


def assign_state(model: nn.Module, arrays: Optional[Mapping[str, np.ndarray]]) -> None:
    """Load full ``arrays`` (libai names; rank 0's are used, others may pass None) into ``model``.

    Tensors the arrays do not name keep their current values (the caller has decided that is
    acceptable and said so).
    """
    current = model.state_dict()
    names = broadcast_object(sorted(arrays) if arrays is not None else None,
                             _device_type(current))
    new_state: Dict[str, flow.Tensor] = {}
    for name in names:
        tensor = current[name]
        if not tensor.is_global:
            value = flow.tensor(arrays[name], dtype=tensor.dtype).to(tensor.device)
        else:
            device = tensor.placement.type
            value = _from_rank0(arrays[name] if arrays is not None else None, tensor.dtype, device)
            whole = [flow.sbp.broadcast] * len(tensor.sbp)
            value = value.to_global(placement=tensor.placement, sbp=whole)
            if tuple(value.sbp) != tuple(tensor.sbp):
                value = value.to_global(sbp=tensor.sbp)
        new_state[name] = value
    with flow.no_grad():
        for name, value in new_state.items():
            current[name].copy_(value)


def gather_state(model: nn.Module) -> Dict[str, np.ndarray]:
    """The full value of every tensor of ``model.state_dict()`` as NumPy (on every rank)."""
    out: Dict[str, np.ndarray] = {}
    for name, tensor in model.state_dict().items():
        if tensor.is_global:
            everyone = _world_placement(tensor.placement.type)
            tensor = tensor.to_global(placement=everyone, sbp=flow.sbp.broadcast).to_local()
        out[name] = tensor.detach().cpu().numpy()
    return out


def _device_type(state: Mapping[str, flow.Tensor]) -> str:
    for tensor in state.values():
        return tensor.placement.type if tensor.is_global else tensor.device.type
    return "cpu"
