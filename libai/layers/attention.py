"""``MultiheadAttention``: self or cross attention with heads split over tensor parallel.

The query/key/value projection is one ``"col"`` Linear whose output is laid out head by head
(``[heads, 3, head_size]``), so splitting its output features over tensor-parallel ranks hands
each rank whole heads with their own q, k and v: attention then runs locally per rank, and the
``"row"`` output projection sums the heads' contributions (one all-reduce).

Masks: ``attention_mask`` holds 1 (or True) where a query may attend to a key and 0 where it
may not; shapes ``[batch, key_len]`` (padding), ``[batch, query_len, key_len]`` or
``[batch, 1, query_len, key_len]``. ``attn_mask_type="causal"`` adds the lower-triangular
mask itself (query ``i`` sees keys ``<= i``, shifted by the cached length when
``past_key_value`` is given). Masked scores are replaced by -10000 before the softmax, so
their weights underflow to exactly zero in float32.
"""
import enum
import math
from typing import Any, Callable, Optional, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers.linear import Linear
from libai.layers.utils import arange, broadcast, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["AttnMaskType", "MultiheadAttention"]

_MASK_FILL = -10000.0


class AttnMaskType(str, enum.Enum):
    """Which mask the attention builds itself (usable wherever the strings are)."""

    padding = "padding"
    causal = "causal"


class MultiheadAttention(nn.Module):
    """Scaled dot-product attention over ``num_attention_heads`` heads.

    Args:
        hidden_size: model width; divisible by ``num_attention_heads``.
        num_attention_heads: divisible by the tensor parallel size.
        is_cross_attention: queries from ``hidden_states``, keys/values from
            ``encoder_states``.
        attention_dropout_prob: dropout on the attention weights.
        output_dropout_prob: dropout on the output.
        init_method, output_layer_init_method: initialisers of the input projections and of
            the output projection (the latter defaults to ``init_method``).
        bias_dropout_fusion: on CUDA, fuse the output bias add with dropout; ignored on the CPU.
        scale_mask_softmax_fusion: on CUDA, fuse scale + mask + softmax; ignored on the CPU.
        apply_query_key_layer_scaling: divide the scores by ``layer_idx + 1`` before the
            softmax input is rescaled back (keeps fp16 scores in range; a no-op in fp32 maths).
        attn_mask_type: ``"padding"`` (only the given mask) or ``"causal"``.
        layer_idx: pipeline position.
    """

    def __init__(
        self,
        hidden_size: int,
        num_attention_heads: int,
        is_cross_attention: bool = False,
        attention_dropout_prob: float = 0.0,
        output_dropout_prob: float = 0.0,
        init_method: Callable[[flow.Tensor], Any] = nn.init.xavier_normal_,
        output_layer_init_method: Optional[Callable[[flow.Tensor], Any]] = None,
        bias_dropout_fusion: bool = False,
        scale_mask_softmax_fusion: bool = False,
        apply_query_key_layer_scaling: bool = False,
        attn_mask_type: Union[str, AttnMaskType] = "padding",
        *,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        layout = current_layout()
        _check_heads(hidden_size, num_attention_heads, layout.tensor_parallel_size)
        self.layout = layout
        self.layer_idx = layer_idx
        self.hidden_size = hidden_size
        self.num_heads = num_attention_heads
        self.head_size = hidden_size // num_attention_heads
        self.is_cross_attention = is_cross_attention
        self.attn_mask_type = _mask_type(attn_mask_type)
        on_cuda = layout.device_type == "cuda"
        self.bias_dropout_fusion = bias_dropout_fusion and on_cuda
        self.scale_mask_softmax_fusion = scale_mask_softmax_fusion and on_cuda
        self.coeff = float(layer_idx + 1) if apply_query_key_layer_scaling else 1.0
        self.norm_factor = math.sqrt(self.head_size) * self.coeff
        self.output_dropout_prob = output_dropout_prob
        if output_layer_init_method is None:
            output_layer_init_method = init_method

        col = dict(parallel="col", init_method=init_method, layer_idx=layer_idx)
        if is_cross_attention:
            self.query = Linear(hidden_size, hidden_size, **col)
            self.key_value = Linear(hidden_size, 2 * hidden_size, **col)
        else:
            self.query_key_value = Linear(hidden_size, 3 * hidden_size, **col)
        self.dense = Linear(
            hidden_size, hidden_size, parallel="row", init_method=output_layer_init_method,
            skip_bias_add=self.bias_dropout_fusion, layer_idx=layer_idx,
        )
        self.attention_dropout = nn.Dropout(attention_dropout_prob)
        self.output_dropout = nn.Dropout(output_dropout_prob)

    # ------------------------------------------------------------------------------ forward
    def forward(
        self,
        hidden_states: flow.Tensor,
        attention_mask: Optional[flow.Tensor] = None,
        encoder_states: Optional[flow.Tensor] = None,
        past_key_value: Optional[Tuple[flow.Tensor, flow.Tensor]] = None,
        use_cache: bool = False,
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Tuple[flow.Tensor, flow.Tensor]]]:
        """Attend from ``hidden_states`` ``[batch, seq, hidden]``.

        ``past_key_value`` is ``(key, value)`` of shape ``[batch, heads, past_len, head_size]``
        from an earlier call with ``use_cache=True`` (for cross attention: the cached encoder
        projections, reused as they are). With ``use_cache`` the result is
        ``(output, (key, value))``.
        """
        query, key, value = self._project(hidden_states, encoder_states, past_key_value)
        present = (key, value) if use_cache else None
        scores = flow.matmul(query, key, transpose_b=True) * (1.0 / self.norm_factor)
        mask = self._build_mask(attention_mask, query.shape[2], key.shape[2])
        probs = self._masked_softmax(scores, mask)
        probs = self.attention_dropout(probs)
        context = flow.matmul(probs, value)  # [b, heads, q_len, head_size]
        batch, q_len = context.shape[0], context.shape[2]
        context = context.permute(0, 2, 1, 3).reshape(batch, q_len, self.hidden_size)
        output = self._output(context)
        return (output, present) if use_cache else output

    def _project(
        self,
        hidden_states: flow.Tensor,
        encoder_states: Optional[flow.Tensor],
        past_key_value: Optional[Tuple[flow.Tensor, flow.Tensor]],
    ) -> Tuple[flow.Tensor, flow.Tensor, flow.Tensor]:
        """q, k, v as ``[batch, heads, len, head_size]`` (heads split over tensor parallel)."""
        if self.is_cross_attention:
            query = self._heads(self.query(hidden_states), 1)[0]
            if past_key_value is not None:
                key, value = past_key_value
            else:
                if encoder_states is None:
                    raise ValueError(
                        "cross attention needs encoder_states (the encoder output), or a cached "
                        "past_key_value from an earlier call"
                    )
                key, value = self._heads(self.key_value(encoder_states), 2)
            return query, key, value
        query, key, value = self._heads(self.query_key_value(hidden_states), 3)
        if past_key_value is not None:
            past_key, past_value = past_key_value
            key = flow.cat([self._to_here(past_key), key], dim=2)
            value = flow.cat([self._to_here(past_value), value], dim=2)
        return query, key, value

    def _heads(self, fused: flow.Tensor, parts: int) -> Tuple[flow.Tensor, ...]:
        """``[b, s, parts*hidden]`` laid out per head -> ``parts`` tensors ``[b, heads, s, d]``."""
        batch, seq = fused.shape[0], fused.shape[1]
        per_head = fused.view(batch, seq, self.num_heads, parts * self.head_size)
        per_head = per_head.permute(0, 2, 1, 3)
        return tuple(flow.chunk(per_head, parts, dim=-1))

    def _to_here(self, tensor: flow.Tensor) -> flow.Tensor:
        return to_sbp(tensor, self.layout, self.layer_idx)

    def _build_mask(
        self, attention_mask: Optional[flow.Tensor], q_len: int, k_len: int
    ) -> Optional[flow.Tensor]:
        """A boolean ``[batch|1, 1, q_len|1, k_len]`` mask (True = attend), or None."""
        mask = None
        if attention_mask is not None:
            mask = _as_4d_bool(self._to_here_whole(attention_mask), q_len, k_len)
        if self.attn_mask_type == AttnMaskType.causal:
            causal = self._causal_mask(q_len, k_len)
            mask = causal if mask is None else flow.logical_and(mask, causal)
        return mask

    def _to_here_whole(self, tensor: flow.Tensor) -> flow.Tensor:
        return to_sbp(tensor, self.layout, self.layer_idx, tensor_sbp=broadcast())

    def _causal_mask(self, q_len: int, k_len: int) -> flow.Tensor:
        # query i is position (k_len - q_len + i) of the full sequence when keys are cached
        rows = arange(k_len - q_len, k_len, self.layout, self.layer_idx).view(q_len, 1)
        cols = arange(0, k_len, self.layout, self.layer_idx).view(1, k_len)
        return (cols <= rows).view(1, 1, q_len, k_len)

    def _masked_softmax(self, scores: flow.Tensor, mask: Optional[flow.Tensor]) -> flow.Tensor:
        if self.scale_mask_softmax_fusion and mask is not None:
            return flow._C.fused_scale_mask_softmax(
                scores, mask.expand(*scores.shape), fill_value=_MASK_FILL, scale=self.coeff
            )
        if self.coeff != 1.0:
            scores = scores * self.coeff
        if mask is not None:
            scores = scores.masked_fill(flow.logical_not(mask), _MASK_FILL)
        return flow.softmax(scores, dim=-1)

    def _output(self, context: flow.Tensor) -> flow.Tensor:
        output = self.dense(context)
        if self.bias_dropout_fusion:
            output, bias = output
            p = self.output_dropout_prob if self.training else 0.0
            return flow._C.fused_bias_add_dropout(output, bias, p=p, axis=output.ndim - 1)
        return self.output_dropout(output)

    def extra_repr(self) -> str:
        return (
            f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, "
            f"is_cross_attention={self.is_cross_attention}, "
            f"attn_mask_type={self.attn_mask_type.value}, layer_idx={self.layer_idx}"
        )


def _as_4d_bool(mask: flow.Tensor, q_len: int, k_len: int) -> flow.Tensor:
    """Accept ``[b, k]``, ``[b, q, k]`` or ``[b, 1, q, k]``; return bool ``[b, 1, q|1, k]``."""
    if mask.dtype != flow.bool:
        mask = mask != 0
    if mask.ndim == 2:
        mask = mask.unsqueeze(1).unsqueeze(1)
    elif mask.ndim == 3:
        mask = mask.unsqueeze(1)
    elif mask.ndim != 4:
        raise ValueError(
            f"attention_mask must be [batch, key_len], [batch, query_len, key_len] or "
            f"[batch, 1, query_len, key_len]; got shape {tuple(mask.shape)}"
        )
    if mask.shape[-1] != k_len or mask.shape[-2] not in (1, q_len):
        raise ValueError(
            f"attention_mask of shape {tuple(mask.shape)} does not fit {q_len} queries and "
            f"{k_len} keys"
        )
    return mask


def _mask_type(value: Union[str, AttnMaskType]) -> AttnMaskType:
    try:
        return AttnMaskType(value)
    except ValueError:
        raise ValueError(
            f"attn_mask_type={value!r} is not supported; use 'padding' or 'causal'"
        ) from None


def _check_heads(hidden_size: int, num_heads: int, tp: int) -> None:
    if hidden_size % num_heads:
        raise ValueError(
            f"hidden_size={hidden_size} is not divisible by num_attention_heads={num_heads}"
        )
    if num_heads % tp:
        raise ValueError(
            f"num_attention_heads={num_heads} cannot be split over tensor_parallel_size={tp}; "
            f"use a head count divisible by {tp}"
        )
