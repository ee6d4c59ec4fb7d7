"""Helpers for launched scripts that compare a parallel layout with a one-process run.

The pattern: build the same module twice from the same seed, once under the layout being
tested (global tensors) and once under a one-process local layout (plain local tensors), feed
both the same data, and compare outputs and gradients. libai initialises every parameter from
the full tensor drawn on the CPU generator, so both builds start from identical weights.
"""
import json
import os
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

import libai  # noqa: F401  (must precede oneflow)
import numpy as np
import oneflow as flow

from libai.utils.distributed import ParallelLayout, default_device_type, ttol


# The layouts the launched model scripts are run under, by the name used in their arguments and
# results ("tp2/gpt"): 2 processes for the first three, 4 for the 2-D ones.
LAYOUTS: Dict[str, Dict[str, int]] = {
    "tp2": dict(tensor_parallel_size=2),
    "dp2": dict(data_parallel_size=2),
    "pp2": dict(pipeline_parallel_size=2),
    "dp2_tp2": dict(data_parallel_size=2, tensor_parallel_size=2),
    "tp2_pp2": dict(tensor_parallel_size=2, pipeline_parallel_size=2),
}


def local_layout() -> ParallelLayout:
    """A one-process layout of plain local tensors on this machine's device type: every rank of
    the launched world computes the whole reference itself (a one-process *global* layout would
    place it on rank 0 only)."""
    return ParallelLayout.from_config({"device_type": default_device_type()}, world_size=1,
                                      rank=0).local_copy()


def global_layout(**sizes: Any) -> ParallelLayout:
    """A layout over the launched world (``tensor_parallel_size=2`` ...)."""
    sizes.setdefault("device_type", default_device_type())
    return ParallelLayout.from_config(sizes)


def place(array: np.ndarray, layout: ParallelLayout, stage: int = 0, split_batch: bool = True):
    """``array`` as an input tensor: local, or global on ``stage`` with the batch split."""
    tensor = flow.tensor(array)
    if not layout.is_global:
        return tensor.to(layout.device)
    placed = tensor.to(layout.device).to_global(placement=layout.stage_placement(stage), sbp=layout.nd_sbp())
    return placed.to_global(sbp=layout.nd_sbp(flow.sbp.split(0))) if split_batch else placed


def like(array: np.ndarray, reference: flow.Tensor) -> flow.Tensor:
    """``array`` placed where ``reference`` lives (broadcast), or local on its device."""
    tensor = flow.tensor(array, dtype=reference.dtype)
    if not reference.is_global:
        return tensor.to(reference.device)
    b = flow.sbp.broadcast
    return tensor.to_global(placement=reference.placement, sbp=[b] * len(reference.sbp))


def full(tensor: flow.Tensor) -> np.ndarray:
    """The full value of a (local or global) tensor on every rank."""
    return ttol(tensor).numpy()


def rel_err(actual: np.ndarray, expected: np.ndarray) -> float:
    """max |actual - expected| relative to max |expected| (absolute when that is ~0)."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        return float("inf")
    scale = max(float(np.abs(expected).max()) if expected.size else 0.0, 1e-6)
    return float(np.abs(actual - expected).max() / scale) if expected.size else 0.0


def build_twice(build: Callable[[], Any], layout: ParallelLayout, seed: int = 0) -> Tuple[Any, Any]:
    """``(under layout, under a local one-process layout)``, both from ``seed``."""
    flow.manual_seed(seed)
    with layout:
        parallel = build()
    flow.manual_seed(seed)
    with local_layout():
        reference = build()
    return parallel, reference


def compare_params(parallel: flow.nn.Module, reference: flow.nn.Module, grads: bool) -> Dict[str, float]:
    """Relative error of every parameter (or its gradient), by name."""
    ref = dict(reference.named_parameters())
    errors = {}
    for name, param in parallel.named_parameters():
        a = param.grad if grads else param
        b = ref[name].grad if grads else ref[name]
        errors[name] = rel_err(full(a), b.numpy())
    return errors


def sbp_names(tensor: flow.Tensor) -> Optional[list]:
    return [str(s) for s in tensor.sbp] if tensor.is_global else None


def placement_ranks(tensor: flow.Tensor) -> Optional[list]:
    return np.asarray(tensor.placement.ranks).tolist() if tensor.is_global else None


def write_results(results: Dict[str, Any], path: str) -> None:
    """Rank 0 writes ``results`` as JSON (atomically)."""
    if flow.env.get_rank() != 0:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def loss_weights(shape: Iterable[int], seed: int) -> np.ndarray:
    """Fixed random weights: ``(output * w).sum()`` gives every output a distinct gradient."""
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def run_pair(parallel: flow.nn.Module, reference: flow.nn.Module,
             forward: Callable[[flow.nn.Module, Optional[ParallelLayout]], flow.Tensor],
             layout: ParallelLayout, seed: int) -> Dict[str, Any]:
    """Forward both modules (``forward(module, layout)``, ``layout=None`` for the reference),
    backward a fixed weighted sum of the outputs, and compare outputs and gradients."""
    out_p = forward(parallel, layout)
    out_r = forward(reference, None)
    weights = loss_weights(out_r.shape, seed)
    (out_p * like(weights, out_p)).sum().backward()
    (out_r * like(weights, out_r)).sum().backward()
    return {
        "out": rel_err(full(out_p), out_r.numpy()),
        "grads": compare_params(parallel, reference, grads=True),
        "min_grad_norm": min(float(np.linalg.norm(p.grad.numpy())) for p in reference.parameters()),
        "out_sbp": sbp_names(out_p),
        "out_ranks": placement_ranks(out_p),
    }


def record_replicated_outputs(model: flow.nn.Module, layout: ParallelLayout, batch: int) -> list:
    """Note, while ``model`` runs, every module whose output holds the whole batch on every
    data-parallel rank (``broadcast`` on the data axis with ``batch`` rows): work that each
    rank repeats for the whole batch instead of its share. Returns the list it fills with
    ``"<module name> <shape> <sbp>"``; it stays empty without a data-parallel axis."""
    seen: list = []
    if not layout.is_global or layout.data_parallel_size < 2:
        return seen

    def hook(name, module, output):
        outputs = output.values() if isinstance(output, dict) else (
            output if isinstance(output, (tuple, list)) else [output])
        for out in outputs:
            if (isinstance(out, flow.Tensor) and out.is_global and out.ndim
                    and out.shape[0] == batch
                    and layout.logical_sbp(out.sbp)[0] == flow.sbp.broadcast):
                seen.append(f"{name or type(module).__name__} "
                            f"{tuple(out.shape)} {sbp_names(out)}")

    for name, module in model.named_modules():
        module.register_forward_hook(lambda m, _inputs, out, name=name: hook(name, m, out))
    return seen
