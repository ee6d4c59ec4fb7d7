"""What one call of a module computes and keeps, from its inputs' and output's shapes.

The rules are by what a module does, read from the module itself rather than from a list of
model families: a weight of three or more dimensions is a convolution (any kernel, stride,
groups or dilation: each output element is one multiply-add per weight element of its output
channel, ``weight.numel() / out_channels``), a two-dimensional weight with ``in_features`` a
linear layer, a class named ``*Norm*`` a normalisation, ``*Pool*`` a pooling, the activation
functions by name, dropout by its probability. FLOPs count 2 per multiply-add and 1 per
elementwise operation. "Kept" is what OneFlow's autograd keeps for the backward pass, in
elements of the compute dtype (``kept_e``) and in bytes (``kept_1``: masks, indices), measured on
OneFlow 0.9 (``docs/preflight.md``, "CNNs and your own models").

A module no rule knows gets ``None``: the planner lists it by class with its parameters.
"""
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

__all__ = ["CallCost", "leaf_cost", "matmul_cost", "numel"]


@dataclass
class CallCost:
    """One call: forward FLOPs, and the tensors kept for backward (``keep``: tensors kept in the
    compute dtype, counted once even when two modules keep the same one; ``kept_1``: bytes of
    masks and indices made by the call)."""

    flops: float
    keep: List[Any]
    kept_1: float = 0.0
    extra_e: float = 0.0  # elements of tensors the call makes and keeps (compute dtype)


def numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


#: Elementwise activation modules: how many tensors of their size each keeps for backward
#: (OneFlow 0.9: ReLU keeps its output, GELU its input, libai's composite SiLU two).
ACTIVATION_MODULES = {"relu": 1, "relu6": 1, "leakyrelu": 1, "gelu": 1, "silu": 2, "swish": 2,
                      "quickgelu": 2, "sigmoid": 1, "tanh": 1, "hardswish": 1, "hardsigmoid": 1,
                      "elu": 1, "selu": 1, "mish": 2, "softplus": 1, "softmax": 1, "logsoftmax": 1,
                      "prelu": 1}
#: Modules that compute nothing and keep nothing (views, bookkeeping).
NOTHING_MODULES = {"identity", "flatten", "unflatten"}


def _dropout_p(module: Any) -> Optional[float]:
    for attr in ("p", "drop_prob", "prob"):
        value = getattr(module, attr, None)
        if isinstance(value, (int, float)):
            return float(value)
    return None


def leaf_cost(module: Any, inputs: Sequence[Any], output: Any, training: bool = True) -> Optional[CallCost]:
    """The cost of one call of a leaf ``module`` (see the module docstring), or ``None`` when no
    rule knows the module."""
    tensors = [x for x in inputs if hasattr(x, "shape")]
    x = tensors[0] if tensors else None
    y = output if hasattr(output, "shape") else None
    if x is None or y is None:
        return None
    name = type(module).__name__.lower().lstrip("_")
    weight = getattr(module, "weight", None)
    n_in, n_out = numel(x.shape), numel(y.shape)
    bias = n_out if getattr(module, "bias", None) is not None else 0
    if weight is not None and weight.ndim >= 3:  # a convolution: [out, in/groups, *kernel]
        per_out = numel(weight.shape[1:])
        if "transpose" in name:  # [in, out/groups, *kernel]: each input element is spread
            return CallCost(2.0 * n_in * per_out + bias, [x])
        return CallCost(2.0 * n_out * per_out + bias, [x])
    if weight is not None and weight.ndim == 2 and hasattr(module, "in_features"):
        rows = n_in // max(int(module.in_features), 1)
        return CallCost(2.0 * rows * numel(weight.shape) + bias, [x])
    if "loss" in name:  # a few operations per score; cross entropy keeps its softmax
        return CallCost(3.0 * n_in, [], 0.0, float(n_in) if "entropy" in name else 0.0)
    if "embedding" in name:  # a lookup: the ids are kept, no arithmetic
        return CallCost(0.0, [], 8.0 * n_in if "int" in str(x.dtype) else 0.0)
    if "norm" in name:  # mean, variance, normalise, scale, shift
        # libai's BatchNorm2d is composite (mean, centre, square, scale, shift as separate ops):
        # measured on OneFlow 0.9's CPU, one call keeps 3.4 × its input in all; OneFlow's own
        # nn.BatchNorm* runs one normalization kernel that keeps its input (and per-channel
        # statistics): measured, tests/plan/test_cnn_memory.py
        composite = "batchnorm" in name and type(module).__module__.startswith("libai")
        return CallCost(5.0 * n_in, [x], 0.0, 2.4 * n_in if composite else 0.0)
    if "pool" in name:
        return _pool(module, name, x, y)
    if "dropout" in name or "droppath" in name or "drop_path" in name:
        p = _dropout_p(module)
        return CallCost(float(n_out), [], float(n_out) if training and p else 0.0)
    params = list(module.parameters(recurse=False)) if hasattr(module, "parameters") else []
    if params and all(p.ndim == 1 for p in params) and n_in == n_out:
        return CallCost(2.0 * n_out, [x])  # a per-channel scale and shift (ResMLP's Affine)
    if name in NOTHING_MODULES:
        return CallCost(0.0, [])
    if name in ACTIVATION_MODULES:
        keeps = ACTIVATION_MODULES[name]
        kept = [y] if name in ("relu", "relu6", "sigmoid", "tanh", "softmax", "logsoftmax") else [x]
        return CallCost(float(n_out) * (5 if "softmax" in name else 1), kept, 0.0, float(n_out) * (keeps - 1))
    return None


def _pool(module: Any, name: str, x: Any, y: Any) -> CallCost:
    """Max pooling keeps its input and the int64 index of each maximum; average pooling keeps
    nothing (its gradient needs shapes only). FLOPs: one per input element read per window."""
    n_in, n_out = numel(x.shape), numel(y.shape)
    kernel = getattr(module, "kernel_size", None)
    if "adaptive" in name or kernel is None:
        flops = float(n_in)
    else:
        k = kernel if isinstance(kernel, (tuple, list)) else (kernel,) * (len(x.shape) - 2)
        flops = float(n_out * numel(k))
    if "max" in name:
        return CallCost(flops, [x], 8.0 * n_out)
    return CallCost(flops, [])


def matmul_cost(a: Any, b: Any, out: Any) -> CallCost:
    """A matrix product a module's own code makes (attention scores, ``probs @ v``): 2 × the
    output's elements × the contracted size; both operands are kept."""
    inner = int(a.shape[-1]) if a.ndim >= 2 else int(a.shape[0])
    if out is not None and hasattr(out, "shape") and out.ndim and a.ndim >= 2 and b.ndim >= 2:
        if int(a.shape[-1]) not in (int(b.shape[-2]), int(b.shape[-1])):
            inner = int(a.shape[-2])
    return CallCost(2.0 * numel(out.shape) * inner, [a, b])
