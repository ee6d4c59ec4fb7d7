"""``Linear``: a fully connected layer that is data-, column- or row-parallel.

With tensor parallel size ``t``:

- ``parallel="col"``: the weight ``[out, in]`` is split over ``out`` on the tensor axis. The
  input is needed whole (broadcast) and each rank computes a slice of the output features, so
  the output is split on its last dim. Use it for the first matmul of a pair.
- ``parallel="row"``: the weight is split over ``in``. The input must be split on its last dim
  (which is what a ``"col"`` layer produces, with no communication in between); each rank's
  product is a partial sum, converted to broadcast (one all-reduce) before the bias is added.
- ``parallel="data"``: a replicated weight, plain data parallelism.

Under a one-process layout the three modes compute the same thing as ``nn.Linear``.
"""
from typing import Any, Callable, Optional, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers.utils import broadcast, make_parameter, split, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["Linear", "Linear1D"]

_PARALLEL_MODES = ("data", "col", "row")


class Linear(nn.Module):
    """``y = x Wᵀ + b`` with the weight distributed as ``parallel`` says.

    Args:
        in_features, out_features: sizes of the last input and output dims.
        bias: add a learned bias (initialised to zero).
        parallel: ``"data"``, ``"col"`` or ``"row"`` (see the module docstring).
        init_method: fills the full ``[out, in]`` weight in place; the default is
            Xavier-normal.
        skip_bias_add: return ``(x Wᵀ, b)`` and let the caller add the bias, so it can fuse
            the add with the next op (bias+GELU, bias+dropout).
        dtype: parameter dtype (positional after ``skip_bias_add``, as in LiBai).
        layer_idx: which layer this belongs to; picks the pipeline stage (keyword only).
    """

    # Conv1D (GPT-2's layout) stores the weight [in, out]; everything else is the same
    _stored_transposed = False

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        parallel: str = "data",
        init_method: Callable[[flow.Tensor], Any] = nn.init.xavier_normal_,
        skip_bias_add: bool = False,
        dtype: flow.dtype = flow.float32,
        *,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        if parallel not in _PARALLEL_MODES:
            raise ValueError(
                f"Linear(parallel={parallel!r}) is not a parallel mode; use one of {_PARALLEL_MODES}"
            )
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.in_features = in_features
        self.out_features = out_features
        self.parallel = parallel
        self.skip_bias_add = skip_bias_add
        _check_divisible(parallel, in_features, out_features, self.layout.tensor_parallel_size)

        # the weight is [out, in] (or [in, out] when stored transposed): "col" splits out
        out_dim, in_dim = (1, 0) if self._stored_transposed else (0, 1)
        weight_sbp = {"col": split(out_dim), "row": split(in_dim), "data": None}[parallel]
        bias_sbp = split(0) if parallel == "col" else None
        shape = (in_features, out_features) if self._stored_transposed else (out_features, in_features)
        self.weight = make_parameter(shape, init_method, self.layout, layer_idx, weight_sbp, dtype)
        self.bias = (
            make_parameter((out_features,), nn.init.zeros_, self.layout, layer_idx, bias_sbp, dtype)
            if bias
            else None
        )

    def forward(
        self, x: flow.Tensor
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Optional[flow.Tensor]]]:
        layout, idx = self.layout, self.layer_idx
        if self.parallel == "row":
            x = to_sbp(x, layout, idx, tensor_sbp=split(x.ndim - 1))
        else:
            x = to_sbp(x, layout, idx, tensor_sbp=broadcast())
        if self._stored_transposed:
            y = flow.matmul(x, self.weight)
        elif layout.local_tensors and self._few_rows_wide_input(x):
            y = _product_by_weight_rows(x, self.weight)
        else:
            y = flow.nn.functional.linear(x, self.weight)
        if self.parallel == "row":
            # partial sums over the tensor axis -> the full product on every rank
            y = to_sbp(y, layout, idx, tensor_sbp=broadcast())
        if self.skip_bias_add:
            return y, self.bias
        if self.bias is not None:
            y = y + self.bias
        return y

    def _few_rows_wide_input(self, x: flow.Tensor) -> bool:
        """Whether ``x Wᵀ`` is a decoding-sized product (2-32 rows) narrowing its input at
        least 4-fold (GPT-2's second MLP product), the shape where OneFlow's CPU product is
        slow in this orientation (see :func:`_product_by_weight_rows`)."""
        rows = x.numel() // self.in_features if self.in_features else 0
        return 1 < rows <= 32 and self.in_features >= 4 * self.out_features

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}, parallel={self.parallel}, layer_idx={self.layer_idx}"
        )


# LiBai's older name for the same layer.
Linear1D = Linear


def _product_by_weight_rows(x: flow.Tensor, weight: flow.Tensor) -> flow.Tensor:
    """``x Wᵀ`` computed as ``(W xᵀ)ᵀ``, for a few rows of ``x`` against a weight much wider
    than it is tall. OneFlow 0.9 hands both to one ``sgemm``; with 8 rows, 2048 inputs and 512
    outputs OpenBLAS took 800-840 CPU µs in the first orientation and 340-400 in this one (the
    same values in every shape measured: each output is the same dot product)."""
    flat = x.reshape(-1, x.shape[-1])
    out = flow.matmul(weight, flat, transpose_b=True).t()
    return out.reshape(*x.shape[:-1], weight.shape[0])


def _check_divisible(parallel: str, in_features: int, out_features: int, tp: int) -> None:
    if parallel == "col" and out_features % tp:
        raise ValueError(
            f"Linear(parallel='col') splits out_features={out_features} over "
            f"tensor_parallel_size={tp}, which does not divide it; pick sizes divisible by {tp}"
        )
    if parallel == "row" and in_features % tp:
        raise ValueError(
            f"Linear(parallel='row') splits in_features={in_features} over "
            f"tensor_parallel_size={tp}, which does not divide it; pick sizes divisible by {tp}"
        )
