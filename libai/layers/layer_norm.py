"""``LayerNorm`` and ``RMSLayerNorm``: normalisations placed like every libai layer.

OneFlow 0.9.0's fused ``flow._C.layer_norm_affine`` exists only for CUDA; on the CPU it aborts
the whole process at compute time. The layer therefore decides once, at construction, from
``layout.device_type``: the fused kernel on CUDA; elsewhere, with a scale and a shift (every
model of the zoo) and no tensor parallelism, a layer norm whose gradient is written out
(``_AffineLayerNorm``: about half the kernels of autograd through OneFlow's composite, the same
values to float rounding), and the composite ``nn.functional.layer_norm`` (mean/variance/rsqrt)
in the other cases. Callers never choose. On CPU tensors the means over the last dim of both
norms are matrix-vector products (:func:`trailing_mean`: OneFlow's CPU reductions are several
times slower at a norm's widths), and under ``no_grad`` the written-out form runs without
``autograd.Function`` (decoding).

``RMSLayerNorm`` (alias ``RMSNorm``) is the T5 / Llama norm: no mean subtraction and no shift,
``y = x / sqrt(mean(x²) + eps) * weight``. It is written with element-wise ops only (the fused
``flow._C.rms_norm`` has no CPU kernel in 0.9.0) and always computes the statistics in float32,
as Hugging Face's T5 and Llama do, so half-precision inputs do not lose the small variances.
"""
import functools
from typing import Callable, Optional, Sequence, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers.utils import broadcast, make_parameter, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["LayerNorm", "RMSLayerNorm", "RMSNorm"]


class _TrailingNorm(nn.Module):
    """What both norms share: the normalised trailing shape, ``eps``, the placement and the
    learned scale (``weight``, initialised to 1, broadcast on the layer's stage)."""

    def __init__(
        self,
        normalized_shape: Union[int, Sequence[int]],
        eps: float,
        elementwise_affine: bool,
        layer_idx: int,
        dtype: flow.dtype,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(n) for n in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.weight = self._affine(nn.init.ones_, elementwise_affine, dtype)

    def _affine(self, init: Callable, wanted: bool, dtype: flow.dtype) -> Optional[nn.Parameter]:
        """A parameter of the normalised shape filled by ``init``, or None when not ``wanted``."""
        if not wanted:
            return None
        return make_parameter(self.normalized_shape, init, self.layout, self.layer_idx, None, dtype)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, layer_idx={self.layer_idx}"
        )


class LayerNorm(_TrailingNorm):
    """Normalise over the last ``len(normalized_shape)`` dims, then scale and shift.

    Args:
        normalized_shape: size (or sizes) of the normalised trailing dims.
        eps: added to the variance.
        elementwise_affine: learn a scale (init 1) and a shift (init 0).
        bias: with ``elementwise_affine``, whether to learn the shift.
        layer_idx: pipeline position.

    The input is made whole over the tensor-parallel axis (normalisation needs every feature).
    """

    def __init__(
        self,
        normalized_shape: Union[int, Sequence[int]],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        layer_idx: int = 0,
        dtype: flow.dtype = flow.float32,
    ) -> None:
        super().__init__(normalized_shape, eps, elementwise_affine, layer_idx, dtype)
        self._fused = self.layout.device_type == "cuda"
        # Not under tensor parallelism: there OneFlow 0.9's multi-process Graph runtime aborts on
        # the written-out gradient ("separated_header_mem_ptr() == nullptr", register.cpp:75,
        # sending a register to the other rank), so the composite stays.
        self._written_out = not self._fused and self.layout.tensor_parallel_size == 1
        self.bias = self._affine(nn.init.zeros_, elementwise_affine and bias, dtype)

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        x = to_sbp(x, self.layout, self.layer_idx, tensor_sbp=broadcast())
        begin = x.ndim - len(self.normalized_shape)
        if self._fused and self.bias is not None:
            return flow._C.layer_norm_affine(
                x, self.weight, self.bias,
                begin_norm_axis=begin, begin_params_axis=begin, epsilon=self.eps,
            )
        if self._fused:
            normed = flow._C.layer_norm(
                x, begin_norm_axis=begin, begin_params_axis=begin, epsilon=self.eps
            )
        elif self._written_out and self.bias is not None:
            if _needs_grad(x, self.weight, self.bias):
                return _affine_layer_norm(self.eps).apply(x, self.weight, self.bias)
            # inference (generation): the same ops without autograd.Function's bookkeeping,
            # which costs more than the eight kernels at one token per row
            return _AffineLayerNorm.normalize(x, self.weight, self.bias, self.eps)[0]
        elif self.bias is not None:
            return flow.nn.functional.layer_norm(
                x, self.normalized_shape, self.weight, self.bias, self.eps
            )
        else:
            normed = flow.nn.functional.layer_norm(x, self.normalized_shape, eps=self.eps)
        return normed if self.weight is None else normed * self.weight


class _AffineLayerNorm(flow.autograd.Function):
    """Layer norm with scale and shift over the trailing dims of ``weight``'s shape, for devices
    without OneFlow's fused kernel, with the gradient written out.

    OneFlow's composite ``nn.functional.layer_norm`` leaves the backward to autograd through
    every piece (mean, a double-precision variance, subtraction, rsqrt, two products and a sum),
    about twenty kernels per norm. The closed form, with ``x̂`` the normalised input,
    ``g = dy · weight`` and means over the normalised dims, is
    ``dx = rstd · (g - mean(g) - x̂ · mean(g · x̂))``, ``dweight = Σ dy · x̂``, ``dbias = Σ dy``.
    """

    eps = 1e-5

    @staticmethod
    def normalize(x: flow.Tensor, weight: flow.Tensor, bias: flow.Tensor, eps: float
                  ) -> Tuple[flow.Tensor, flow.Tensor, flow.Tensor]:
        """``(output, normed, rstd)``: the forward, shared by the autograd path and the
        gradient-free one so both give the same bits."""
        dims = list(range(x.ndim - weight.ndim, x.ndim))
        centred = x - trailing_mean(x, dims)
        rstd = flow.rsqrt(trailing_mean(centred * centred, dims) + eps)
        normed = centred * rstd
        return normed * weight + bias, normed, rstd

    @classmethod
    def forward(cls, ctx, x: flow.Tensor, weight: flow.Tensor, bias: flow.Tensor) -> flow.Tensor:
        out, normed, rstd = cls.normalize(x, weight, bias, cls.eps)
        ctx.save_for_backward(normed, rstd, weight)
        return out

    @staticmethod
    def backward(ctx, dy: flow.Tensor):
        normed, rstd, weight = ctx.saved_tensors
        dims = list(range(dy.ndim - weight.ndim, dy.ndim))
        batch_dims = list(range(dy.ndim - weight.ndim))
        g = dy * weight
        dx = rstd * (g - trailing_mean(g, dims) - normed * trailing_mean(g * normed, dims))
        return dx, (dy * normed).sum(dim=batch_dims), dy.sum(dim=batch_dims)


def trailing_mean(x: flow.Tensor, dims: Sequence[int]) -> flow.Tensor:
    """``x.mean(dim=dims, keepdim=True)``; over the last dim of a float32 CPU tensor, as a
    matrix-vector product with a column of ``1/width``.

    OneFlow 0.9's CPU reductions cost 90-300 µs of CPU at the widths of a norm whatever the
    number of rows (a mean over ``[1, 1, 512]``: about 90 µs, its GEMV about 20; over
    ``[4, 128, 256]``: 175-300 against 15-22), which made the two means of a layer norm most
    of a decoding step's norm time and most of a training step's layer-norm time. The product
    sums in another order than the reduction, so the mean may differ in its last bits (a few
    1e-9 on unit-scale values). Local and global tensors alike, eager or in ``nn.Graph`` (the
    column is a constant on the tensor's placement, broadcast); other devices and dtypes keep
    OneFlow's reduction (on CUDA the norms use the fused kernels anyway).
    """
    if len(dims) == 1 and dims[0] == x.ndim - 1 and x.dtype == flow.float32:
        if x.is_global:
            if x.placement.type == "cpu":
                return flow.matmul(x, _global_mean_column(x.shape[-1], x.placement, len(x.sbp)))
        elif not x.is_cuda and not x.is_lazy:
            return flow.matmul(x, _mean_column(x.shape[-1], x.device))
    return x.mean(dim=list(dims), keepdim=True)


@functools.lru_cache(maxsize=16)
def _mean_column(width: int, device: flow.device) -> flow.Tensor:
    """``[width, 1]`` of ``1/width`` (float32), made once per width and device."""
    return flow.full((width, 1), 1.0 / width, dtype=flow.float32, device=device)


@functools.lru_cache(maxsize=64)
def _global_mean_column(width: int, placement: flow.placement, axes: int) -> flow.Tensor:
    """The column of :func:`_mean_column` as an eager global tensor, broadcast on every axis of
    ``placement``. Made eagerly even when first asked for inside ``nn.Graph``'s build (a lazy
    one would be cached and then refused by the next graph); a graph takes the eager tensor in
    as a constant."""
    with flow._oneflow_internal.lazy_mode.guard(False):
        return flow.full((width, 1), 1.0 / width, dtype=flow.float32, placement=placement,
                         sbp=[flow.sbp.broadcast] * axes)


def _needs_grad(*tensors: flow.Tensor) -> bool:
    """Whether autograd records an op on ``tensors`` here."""
    return flow.is_grad_enabled() and any(t.requires_grad for t in tensors)


@functools.lru_cache(maxsize=None)
def _affine_layer_norm(eps: float) -> type:
    """:class:`_AffineLayerNorm` with ``eps`` fixed (``Function.apply`` takes tensors only)."""
    return type(f"_AffineLayerNorm_{eps:g}", (_AffineLayerNorm,), {"eps": eps})


class RMSLayerNorm(_TrailingNorm):
    """Root-mean-square normalisation over the last dim(s), then a learned scale.

    Args:
        normalized_shape: size (or sizes) of the normalised trailing dims.
        eps: added to the mean of squares (T5 and Llama use 1e-6).
        elementwise_affine: learn a scale (initialised to 1); there is never a shift.
        layer_idx: pipeline position.
        dtype: parameter dtype; the result is cast to it when it is half precision (what
            Hugging Face's T5LayerNorm and LlamaRMSNorm do).
        weight_offset: the scale is ``weight_offset + weight`` (Gemma's ``1 + w``, with the
            weight initialised to 0); 0 for the plain scale.
        keep_sbp: normalise the input as it is placed, for a norm over a dim that tensor
            parallelism never splits (Qwen3's per-head q/k norms of head-split activations;
            in one process those are local tensors, and the weight's local value is used).

    Like :class:`LayerNorm`, the input is made whole over the tensor-parallel axis (unless
    ``keep_sbp``) and the weight is broadcast on the layer's stage.
    """

    def __init__(
        self,
        normalized_shape: Union[int, Sequence[int]],
        eps: float = 1e-6,
        elementwise_affine: bool = True,
        *,
        layer_idx: int = 0,
        dtype: flow.dtype = flow.float32,
        weight_offset: float = 0.0,
        keep_sbp: bool = False,
    ) -> None:
        super().__init__(normalized_shape, eps, elementwise_affine, layer_idx, dtype)
        self.l2norm_epsilon = eps  # LiBai's attribute name for the same number
        self.weight_offset = float(weight_offset)
        self.keep_sbp = keep_sbp
        if self.weight_offset:  # a scale of 1 to start: weight = 1 - offset
            start = 1.0 - self.weight_offset
            self.weight = self._affine(lambda w: nn.init.constant_(w, start),
                                       elementwise_affine, dtype)

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        if not self.keep_sbp:
            x = to_sbp(x, self.layout, self.layer_idx, tensor_sbp=broadcast())
        dims = list(range(x.ndim - len(self.normalized_shape), x.ndim))
        # statistics in at least float32 (half-precision inputs are upcast; float64 stays)
        wide = x if x.dtype in (flow.float32, flow.float64) else x.to(flow.float32)
        variance = trailing_mean(wide * wide, dims)
        normed = wide * flow.rsqrt(variance + self.eps)
        if self.weight is None:
            return normed if wide is x else normed.to(x.dtype)
        weight = self.weight
        if self.keep_sbp and not x.is_global and weight.is_global:
            # a one-process attention's local heads (OneProcessLocal): the weight's local value
            # is the whole weight, and its gradient flows back to the global parameter
            weight = weight.to_local()
        if self.weight_offset:
            # Gemma scales in float32 and casts the product: (1 + w) is not representable
            # exactly in half precision
            scaled = normed * (weight.to(normed.dtype) + self.weight_offset)
            return scaled if scaled.dtype == x.dtype else scaled.to(x.dtype)
        if weight.dtype in (flow.float16, flow.bfloat16):
            normed = normed.to(weight.dtype)
        return normed * weight


#: The name Hugging Face's Llama (and most newer code) uses for the same layer.
RMSNorm = RMSLayerNorm
