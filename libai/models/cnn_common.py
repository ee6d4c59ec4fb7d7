"""Convolution building blocks of the CNN classifiers (ResNet, AlexNet), placed on the layout.

The CNNs are data-parallel models: every weight is replicated and the batch is split over the
data-parallel ranks. Like every libai layer, each piece reads the current
:class:`~libai.utils.distributed.ParallelLayout` when built and keeps its parameters there as
global tensors in a multi-process run (plain local tensors in one process), drawn from the full
initial value so that a seeded model is the same in every layout.

:class:`BatchNorm2d` is written with reductions on the global batch rather than OneFlow's fused
kernel: that kernel, given a batch split over ranks, normalises each rank's share with its own
statistics (and leaves each rank a different running mean). Reducing the global tensor instead
makes the statistics those of the whole batch, so a data-parallel step equals the one-process
step exactly (a synchronised batch norm, for free).
"""
import math
from typing import Any, Callable, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai._runtime import onednn_elementwise_enabled
from libai.layers.utils import broadcast, make_parameter, place_constant, to_sbp
from libai.utils.distributed import ParallelLayout, current_layout

__all__ = [
    "BatchNorm2d",
    "Conv2d",
    "check_data_parallel_layout",
    "kaiming_normal_fan_out",
    "torch_default_init",
]

IntPair = Union[int, Tuple[int, int]]


def kaiming_normal_fan_out(tensor: flow.Tensor) -> flow.Tensor:
    """He-normal with ``std = sqrt(2 / fan_out)``: the ResNet paper's initialisation for convs
    followed by ReLU (fan_out = out_channels · kernel area)."""
    fan_out = tensor.shape[0] * math.prod(tensor.shape[2:])
    with flow.no_grad():
        return tensor.normal_(0.0, math.sqrt(2.0 / fan_out))


def torch_default_init(tensor: flow.Tensor) -> flow.Tensor:
    """Uniform in ``±1/sqrt(fan_in)``: the default of PyTorch/flowvision convolution and linear
    layers (Kaiming-uniform with a=√5), which AlexNet and classifier heads were trained with."""
    fan_in = math.prod(tensor.shape[1:])
    bound = 1.0 / math.sqrt(fan_in)
    with flow.no_grad():
        return tensor.uniform_(-bound, bound)


def check_data_parallel_layout(layout: ParallelLayout, model: str) -> None:
    """Refuse a pipeline-parallel layout for a data-parallel model, naming the fix.

    A CNN has no transformer blocks to spread over stages. Under tensor parallelism it runs
    replicated (every tensor-parallel rank computes the whole model), which is correct but
    saves no memory; pipeline parallelism would need stage boundaries it does not define.
    """
    if layout.pipeline_parallel_size > 1:
        raise ValueError(
            f"{model} is a data-parallel model and cannot be split into pipeline stages "
            f"(pipeline_parallel_size={layout.pipeline_parallel_size}); set "
            "train.dist.pipeline_parallel_size=1 and use data_parallel_size for more processes"
        )


def _pair(value: IntPair) -> Tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


class Conv2d(nn.Module):
    """A 2-D convolution whose weight ``[out, in, kh, kw]`` is replicated on the layout.

    Args:
        in_channels, out_channels, kernel_size, stride, padding: as in ``nn.Conv2d``.
        bias: learn an additive bias (off before a batch norm, which has its own).
        init_method: fills the full weight in place (default: PyTorch's uniform default).
        layer_idx: pipeline position (the CNNs keep everything on one stage).

    State-dict names (``weight``, ``bias``) and shapes are ``nn.Conv2d``'s, so torchvision /
    flowvision checkpoints of the same architecture load key for key.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntPair,
        stride: IntPair = 1,
        padding: IntPair = 0,
        bias: bool = True,
        *,
        init_method: Callable[[flow.Tensor], Any] = torch_default_init,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = (
            _pair(kernel_size), _pair(stride), _pair(padding)
        )
        self.weight = make_parameter(
            (out_channels, in_channels, *self.kernel_size), init_method, self.layout, layer_idx
        )
        self.bias = (
            make_parameter((out_channels,), nn.init.zeros_, self.layout, layer_idx) if bias else None
        )

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(
                f"expected input [batch, {self.in_channels}, height, width], got {tuple(x.shape)}; "
                "check the model's in_chans against the images the data transforms produce"
            )
        x = to_sbp(x, self.layout, self.layer_idx, tensor_sbp=broadcast())
        if x.dtype != self.weight.dtype:
            x = x.to(self.weight.dtype)
        return flow.nn.functional.conv2d(
            x, self.weight, self.bias, stride=self.stride, padding=self.padding
        )

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, bias={self.bias is not None}")


def _per_channel(x: flow.Tensor, op: Callable, values: flow.Tensor, rows: bool) -> flow.Tensor:
    """``op(x, values)`` with ``values [C]`` broadcast over ``x [B, C, H, W]``'s channels.

    Same values either way; the layout is the fast one for the kernels in use. OneFlow's own CPU
    kernels broadcast a column over the last axis quickly but the channel axis of a 4-D tensor
    slowly ([16, 64, 32, 32]: 9 ms against 1.1 ms as ``[B·C, H·W]`` rows), and oneDNN's are the
    other way round (0.8 ms against 88 ms): see docs/benchmarks.md, "oneDNN's reference loops".
    """
    if not rows:
        return op(x, values.reshape(1, -1, 1, 1))
    b, c, h, w = x.shape
    return op(x.reshape(b * c, h * w), values.repeat(b).reshape(b * c, 1)).reshape(b, c, h, w)


class BatchNorm2d(nn.Module):
    """Batch normalisation over ``[batch, channels, h, w]`` with statistics of the global batch.

    Training: normalise with the mean and (biased) variance over batch and space, and move the
    running statistics ``running = (1 - momentum) · running + momentum · batch`` (unbiased
    variance), as ``nn.BatchNorm2d`` does. Evaluation: normalise with the running statistics.
    Parameter and buffer names match ``nn.BatchNorm2d`` (``weight``, ``bias``, ``running_mean``,
    ``running_var``, ``num_batches_tracked``). The running statistics are written by OneFlow's
    normalization kernel, the one in-place update of a global buffer that a static graph keeps;
    ``num_batches_tracked`` (informational: the momentum is fixed) advances in Eager mode only.
    """

    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, *, layer_idx: int = 0
    ) -> None:
        super().__init__()
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"BatchNorm2d momentum must be within [0, 1], got {momentum}")
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.weight = make_parameter((num_features,), nn.init.ones_, self.layout, layer_idx)
        self.bias = make_parameter((num_features,), nn.init.zeros_, self.layout, layer_idx)
        place = lambda t: place_constant(t, self.layout, layer_idx)  # noqa: E731
        self.register_buffer("running_mean", place(flow.zeros(num_features)))
        self.register_buffer("running_var", place(flow.ones(num_features)))
        self.register_buffer("num_batches_tracked", place(flow.zeros((), dtype=flow.int64)))

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        if x.ndim != 4 or x.shape[1] != self.num_features:
            raise ValueError(
                f"BatchNorm2d({self.num_features}) expects [batch, {self.num_features}, h, w], "
                f"got {tuple(x.shape)}"
            )
        x = to_sbp(x, self.layout, self.layer_idx, tensor_sbp=broadcast())
        rows = self.layout.device_type == "cpu" and not onednn_elementwise_enabled()
        if self.training:
            mean = x.mean(dim=(0, 2, 3))
            var = _per_channel(x, flow.sub, mean, rows).square().mean(dim=(0, 2, 3))
            self._update_running_stats(mean, var, x.shape[0] * x.shape[2] * x.shape[3])
        else:
            mean, var = self.running_mean, self.running_var
        scale = flow.rsqrt(var + self.eps) * self.weight
        shift = self.bias - mean * scale
        return _per_channel(_per_channel(x, flow.mul, scale, rows), flow.add, shift, rows)

    def _update_running_stats(self, mean: flow.Tensor, var: flow.Tensor, count: int) -> None:
        if count < 2:
            raise ValueError(
                "BatchNorm2d needs more than one value per channel in training "
                f"(got batch × height × width = {count}); use a larger batch or image"
            )
        whole = lambda t: to_sbp(  # noqa: E731  the statistics are the same on every rank
            t.detach(), self.layout, self.layer_idx, tensor_sbp=broadcast(), data_sbp=broadcast()
        )
        mean, unbiased = whole(mean), whole(var) * (count / (count - 1))
        # OneFlow 0.9 keeps no in-place write to a global buffer made inside nn.Graph (copy_,
        # add_, setitem are dropped) except the running-statistics update of its normalization
        # kernel. So that kernel moves them, fed two values per channel, mean ± sqrt(var / 2),
        # whose mean and unbiased variance are exactly the batch's: running = (1 - m) · running
        # + m · batch, in Eager and Graph alike. Its (tiny) output is not used.
        spread = flow.sqrt(unbiased / 2).reshape(1, -1, 1, 1)
        centre = mean.reshape(1, -1, 1, 1)
        pair = flow.cat([centre - spread, centre + spread], dim=0)
        flow._C.normalization(pair, self.running_mean, self.running_var, flow.ones_like(mean),
                              flow.zeros_like(mean), axis=1, epsilon=self.eps,
                              momentum=self.momentum, is_training=True)
        # a count only (the momentum is fixed); inside nn.Graph the increment is not kept
        self.num_batches_tracked.add_(1)

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}"
