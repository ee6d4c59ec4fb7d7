"""``LoRALinear``: a :class:`~libai.layers.Linear` plus a trainable low-rank update (LoRA).

LoRA (Hu et al., 2021) fine-tunes a frozen weight ``W [out, in]`` through a rank-``r`` product::

    y = x Wᵀ + b + (alpha / r) · dropout(x) Aᵀ Bᵀ,    A [r, in],  B [out, r]

``B`` starts at zero, so a freshly wrapped layer computes exactly what the base layer did.

Why a subclass that *adopts* the base layer's parameters instead of a wrapper holding it:
the base weight keeps its state-dict name (``...query_key_value.weight``), so Hugging Face
mappings, ``save_pretrained`` and libai checkpoints of the base model load into a LoRA model
unchanged; only ``lora_A.weight`` / ``lora_B.weight`` are new names.

Tensor parallelism: the adapter is two libai ``Linear`` layers laid out like the base layer's
own halves, so no extra communication pattern appears:

- base ``parallel="col"`` (output split): ``A`` is replicated (``"data"``) and ``B`` is
  column-parallel, so ``B``'s rows - and the update - are split exactly like the output;
- base ``parallel="row"`` (input split): ``A`` is row-parallel, split over its input like the
  weight (its small ``[.., r]`` result is all-reduced) and ``B`` is replicated;
- base ``parallel="data"``: both replicated.

The update lives on the base layer's pipeline stage (same ``layer_idx``).
"""
import copy
import math
from collections import OrderedDict
from typing import Optional, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers.linear import Linear

__all__ = ["LoRALinear"]

_ADAPTER_PARALLEL = {"col": ("data", "col"), "row": ("row", "data"), "data": ("data", "data")}


def _kaiming_uniform(weight: flow.Tensor) -> None:
    # the initialisation nn.Linear (and Hugging Face peft) give A
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5))


class LoRALinear(Linear):
    """A frozen :class:`~libai.layers.Linear` with a trainable rank-``rank`` update.

    Build it from an existing layer with :meth:`from_linear` (what
    :func:`libai.models.utils.lora.apply_lora` does); the base weight and bias are shared with
    that layer, not copied, and frozen (``requires_grad=False``).

    Attributes:
        lora_A, lora_B: the adapter, two bias-free ``Linear`` layers (see the module docstring
            for their tensor-parallel modes).
        scaling: ``alpha / rank``.
        merged: whether the update is currently folded into ``weight`` (see :meth:`merge`).
    """

    lora_A: Linear
    lora_B: Linear

    @classmethod
    def from_linear(
        cls, linear: Linear, rank: int = 8, alpha: float = 16.0, dropout: float = 0.0
    ) -> "LoRALinear":
        """A LoRA layer computing what ``linear`` computes, plus the (zero) update."""
        if not isinstance(linear, Linear):
            raise TypeError(
                f"LoRA wraps a libai.layers.Linear, got {type(linear).__name__}; replace plain "
                "nn.Linear layers by libai.layers.Linear first"
            )
        if isinstance(linear, LoRALinear):
            raise ValueError("this layer already has a LoRA adapter; apply LoRA once")
        if rank < 1:
            raise ValueError(f"LoRA rank must be >= 1, got rank={rank}")
        lora = copy.copy(linear)  # shares the parameter objects and every setting
        # own containers, so adding the adapter does not touch the original layer
        lora._parameters = OrderedDict(linear._parameters)
        lora._buffers = OrderedDict(linear._buffers)
        lora._modules = OrderedDict(linear._modules)
        lora._stored_transposed = linear._stored_transposed  # Conv1D keeps [in, out]
        lora.__class__ = cls
        lora._add_adapter(rank, alpha, dropout)
        return lora

    def _add_adapter(self, rank: int, alpha: float, dropout: float) -> None:
        for param in (self.weight, self.bias):
            if param is not None:
                param.requires_grad = False
        a_mode, b_mode = _ADAPTER_PARALLEL[self.parallel]
        self.rank = rank
        self.alpha = alpha
        self.scaling = alpha / rank
        self.merged = False
        self.lora_dropout = nn.Dropout(dropout)
        self.lora_A = Linear(self.in_features, rank, bias=False, parallel=a_mode,
                             init_method=_kaiming_uniform, layer_idx=self.layer_idx)
        self.lora_B = Linear(rank, self.out_features, bias=False, parallel=b_mode,
                             init_method=nn.init.zeros_, layer_idx=self.layer_idx)

    # ------------------------------------------------------------------------ compute
    def forward(
        self, x: flow.Tensor
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Optional[flow.Tensor]]]:
        # Linear.forward by name, not super(): inside nn.Graph ``self`` is the graph's proxy
        out = Linear.forward(self, x)
        if self.merged:
            return out
        update = self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        if self.skip_bias_add:
            y, bias = out
            return y + update, bias
        return out + update

    def delta_weight(self) -> flow.Tensor:
        """``scaling · B A`` in the base weight's layout (``[out, in]``, or ``[in, out]`` for
        Conv1D), placed and split exactly like ``weight``."""
        delta = flow.matmul(self.lora_B.weight, self.lora_A.weight) * self.scaling
        if self._stored_transposed:
            delta = delta.transpose(0, 1)
        if delta.is_global and tuple(delta.sbp) != tuple(self.weight.sbp):
            delta = delta.to_global(placement=self.weight.placement, sbp=self.weight.sbp)
        return delta

    @flow.no_grad()
    def merge(self) -> None:
        """Fold the update into ``weight`` (inference without the extra matmuls).

        Not idempotent by accident: merging twice is an error. Undo with :meth:`unmerge`
        (floating-point rounding may leave the base weight off by an ulp).
        """
        if self.merged:
            raise RuntimeError("LoRA update already merged; call unmerge() first")
        self.weight.copy_(self.weight + self.delta_weight())
        self.merged = True

    @flow.no_grad()
    def unmerge(self) -> None:
        """Take the update back out of ``weight`` (after :meth:`merge`)."""
        if not self.merged:
            raise RuntimeError("LoRA update is not merged; nothing to unmerge")
        self.weight.copy_(self.weight - self.delta_weight())
        self.merged = False

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, lora_rank={self.rank}, lora_alpha={self.alpha}"
