"""``MultiheadAttention``: self or cross attention with heads split over tensor parallel.

The query/key/value projection is one ``"col"`` Linear whose output is laid out head by head
(``[heads, 3, head_size]``), so splitting its output features over tensor-parallel ranks hands
each rank whole heads with their own q, k and v: attention then runs locally per rank, and the
``"row"`` output projection sums the heads' contributions (one all-reduce).

Masks: ``attention_mask`` holds 1 (or True) where a query may attend to a key and 0 where it
may not; shapes ``[batch, key_len]`` (padding), ``[batch, query_len, key_len]`` or
``[batch, 1, query_len, key_len]``. ``attn_mask_type="causal"`` adds the lower-triangular
mask itself (query ``i`` sees keys ``<= i``, shifted by the cached length when
``past_key_value`` is given). Masked scores are replaced before the softmax so that their
weights are exactly zero: by -inf when the mask is the causal one alone (every query keeps at
least itself), by -10000 when the caller gave a mask (which may leave a row with no key at all:
-10000 then gives uniform weights, -inf would give NaN).

Options for T5 and Llama-style models (all off by default):

- ``bias=False``: projections without biases; ``qkv_bias`` overrides it for the input
  projections alone (Qwen2: biased q/k/v, bias-free output).
- ``softmax_scale``: the factor on ``q·k`` (default ``1/sqrt(head_size)``; T5 uses 1.0).
- ``head_size``: per-head size when ``heads * head_size != hidden_size`` (T5's ``d_kv``).
- ``num_key_value_heads``: grouped-query attention. When it is given (any value, even equal to
  ``num_attention_heads``) the projections are ``query`` (``[heads, head_size]`` rows) and
  ``key_value`` (laid out per key/value head as ``[kv_heads, 2, head_size]`` rows, the layout
  cross attention already uses); each key/value head serves ``heads / kv_heads`` consecutive
  query heads. Under tensor parallelism both head counts must divide by the tensor-parallel
  size, so every rank holds whole groups. The cache keeps the ``kv_heads`` keys/values.
  Without it, self attention keeps the fused per-head ``query_key_value`` projection.
- ``sliding_window``: with the causal mask, query ``i`` sees only the ``sliding_window`` keys
  ``i - sliding_window < j <= i`` (Mistral), in training, in a full forward and in cached
  decoding alike; the cache keeps every key (positions stay the cache's length).
- ``qk_norm_eps``: RMS-normalise each head's query and key (``query_norm`` / ``key_norm``,
  weights ``[head_size]``) after projection and before rotation (Qwen3).
- ``rotary_embedding``: a :class:`~libai.layers.RotaryEmbedding` applied to the new queries
  and keys after projection, at positions shifted by the cached length.
- ``forward(position_bias=...)``: an additive score bias ``[1|batch, heads, q_len, k_len]``
  (T5's relative position bias), added after scaling and before masking. Under tensor
  parallelism pass it whole (broadcast) or already split over heads (``split(1)`` on the
  tensor axis): the layer converts it to ``split(1)``, which from broadcast is a slice without
  communication.
"""
import enum
import math
from typing import Any, Callable, Optional, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers.layer_norm import RMSLayerNorm
from libai.layers.linear import Linear
from libai.layers.rotary import RotaryEmbedding
from libai.layers.utils import (
    OneProcessLocal, active_dropout, arange, broadcast, output_dropout, split, split_like, to_sbp,
)
from libai.utils.distributed import current_layout

__all__ = ["AttnMaskType", "MultiheadAttention"]

_MASK_FILL = -10000.0
# The fill of the causal mask alone, whose rows all keep a key. Same zero weights as -10000, but
# glibc's expf returns 0 for -inf at once and takes its underflow-error path for each -10000:
# the softmax of [4, 8, 128, 128] scores, causal half masked, 11.0 -> 6.7 ms on the CPU, bitwise
# the same result (docs/benchmarks.md, "A Graph step by thread").
_CAUSAL_FILL = float("-inf")


def _causal_bias(mask: flow.Tensor, dtype: flow.dtype) -> flow.Tensor:
    """0 where ``mask`` attends, ``_CAUSAL_FILL`` elsewhere: the causal mask as an additive bias.
    Adding it gives the scores masked_fill would (``s + 0 = s``, ``s - inf = -inf``), bitwise.
    One ``where`` of two scalars: ``zeros_like`` builds a Python module per call in OneFlow 0.9
    (45 against 5 us on the Python thread, per layer and step)."""
    bias = flow.where(mask, 0.0, _CAUSAL_FILL)
    return bias if bias.dtype == dtype else bias.to(dtype)


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
        bias: give every projection a bias.
        qkv_bias: give the query/key/value projections a bias (None: as ``bias``).
        softmax_scale: multiply ``q·k`` by this (``None``: ``1/sqrt(head_size)``).
        num_key_value_heads: grouped-query attention (see the module docstring).
        rotary_embedding: rotate queries and keys by position (self attention only).
        sliding_window: causal attention over this many most recent keys (None: all).
        qk_norm_eps: per-head RMSNorm of queries and keys with this eps (None: none).
        head_size: features per head (``None``: ``hidden_size // num_attention_heads``).
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
        bias: bool = True,
        qkv_bias: Optional[bool] = None,
        softmax_scale: Optional[float] = None,
        num_key_value_heads: Optional[int] = None,
        rotary_embedding: Optional[RotaryEmbedding] = None,
        head_size: Optional[int] = None,
        sliding_window: Optional[int] = None,
        qk_norm_eps: Optional[float] = None,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        layout = current_layout()
        tp = layout.tensor_parallel_size
        if head_size is None:
            _check_heads(hidden_size, num_attention_heads, tp)
        else:
            _check_heads(num_attention_heads * head_size, num_attention_heads, tp)
        if num_key_value_heads is not None:
            _check_kv_heads(num_attention_heads, num_key_value_heads, tp)
        if rotary_embedding is not None and is_cross_attention:
            raise ValueError(
                "rotary_embedding applies to self attention only (cross attention keys are "
                "encoder positions); build the cross attention without it"
            )
        self.layout = layout
        self.layer_idx = layer_idx
        self.hidden_size = hidden_size
        self.num_heads = num_attention_heads
        self.head_size = hidden_size // num_attention_heads if head_size is None else head_size
        self.inner_size = self.num_heads * self.head_size
        self.num_key_value_heads = num_key_value_heads
        self.kv_heads = num_attention_heads if num_key_value_heads is None else num_key_value_heads
        self.separate_query = is_cross_attention or num_key_value_heads is not None
        self.softmax_scale = softmax_scale
        self.rotary_embedding = rotary_embedding
        self.sliding_window = _check_window(sliding_window, attn_mask_type)
        self.is_cross_attention = is_cross_attention
        self.attn_mask_type = _mask_type(attn_mask_type)
        on_cuda = layout.device_type == "cuda"
        self.bias_dropout_fusion = bias_dropout_fusion and on_cuda
        self.scale_mask_softmax_fusion = scale_mask_softmax_fusion and on_cuda
        self.coeff = float(layer_idx + 1) if apply_query_key_layer_scaling else 1.0
        self.norm_factor = math.sqrt(self.head_size) * self.coeff
        # the factor applied to q·k; the softmax re-multiplies by coeff
        if softmax_scale is None:
            self.score_factor = 1.0 / self.norm_factor
        else:
            self.score_factor = softmax_scale / self.coeff
        self.output_dropout_prob = output_dropout_prob
        if output_layer_init_method is None:
            output_layer_init_method = init_method

        qkv_bias = bias if qkv_bias is None else qkv_bias
        col = dict(parallel="col", init_method=init_method, bias=qkv_bias, layer_idx=layer_idx)
        inner, kv_inner = self.inner_size, self.kv_heads * self.head_size
        if self.separate_query:
            self.query = Linear(hidden_size, inner, **col)
            self.key_value = Linear(hidden_size, 2 * kv_inner, **col)
        else:
            self.query_key_value = Linear(hidden_size, 3 * inner, **col)
        if qk_norm_eps is not None:
            # the head dim is never split, so the norms run on the head-split activations
            norm = dict(eps=qk_norm_eps, layer_idx=layer_idx, keep_sbp=True)
            self.query_norm = RMSLayerNorm(self.head_size, **norm)
            self.key_norm = RMSLayerNorm(self.head_size, **norm)
        self.qk_norm = qk_norm_eps is not None
        self.dense = Linear(
            inner, hidden_size, bias=bias, parallel="row", init_method=output_layer_init_method,
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
        position_bias: Optional[flow.Tensor] = None,
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Tuple[flow.Tensor, flow.Tensor]]]:
        """Attend from ``hidden_states`` ``[batch, seq, hidden]``.

        ``past_key_value`` is ``(key, value)`` of shape ``[batch, heads, past_len, head_size]``
        from an earlier call with ``use_cache=True`` (for cross attention: the cached encoder
        projections, reused as they are). With ``use_cache`` the result is
        ``(output, (key, value))``. ``position_bias`` ``[1|batch, heads, q_len, k_len]`` is
        added to the scaled scores (see the module docstring for its layout under TP).
        """
        # in one process the heads are worked on as local tensors (views, not copies; see
        # OneProcessLocal) and go back to global ones with the SBP the global path gives them
        query, key, value, local, rows_sbp = self._project(
            hidden_states, encoder_states, past_key_value
        )
        present = None
        if use_cache:
            heads_sbp = _heads_sbp(rows_sbp)
            present = (local.leave(key, heads_sbp), local.leave(value, heads_sbp))
        grouped = self._grouped_products()
        if grouped:
            scores = self._in_groups(query, key, transpose_shared=True)
        else:
            scores = flow.matmul(query, key, transpose_b=True)
        scores = scores * self.score_factor
        mask = self._build_mask(attention_mask, query.shape[2], key.shape[2])
        position_bias = local.enter(self._place_bias(position_bias))
        if mask is not None and attention_mask is None and not self.scale_mask_softmax_fusion:
            # the layer's own causal mask alone: added as a [1, 1, q, k] bias of 0 and -inf, a
            # broadcast add that keeps the scores' split (masked_fill would need the mask
            # expanded to the scores' shape, then a select forward and backward)
            causal_bias = local.enter(_causal_bias(mask, scores.dtype))
            position_bias = causal_bias if position_bias is None else position_bias + causal_bias
            mask = None
        elif mask is not None and local.active:
            mask = local.enter(mask)
        elif mask is not None:
            # split over batch and heads like the scores: a replicated [1, 1, q, k] causal mask
            # would make OneFlow replicate the softmax and everything after it (see split_like)
            mask = split_like(mask, scores)
        probs = self._masked_softmax(scores, mask, position_bias)
        probs = active_dropout(self.attention_dropout, probs)
        if grouped:
            context = self._in_groups(probs, value)
        else:
            context = flow.matmul(probs, value)  # [b, heads, q_len, head_size]
        batch, q_len = context.shape[0], context.shape[2]
        context = context.permute(0, 2, 1, 3).reshape(batch, q_len, self.inner_size)
        context = local.leave(context, rows_sbp)
        output = self._output(context)
        return (output, present) if use_cache else output

    def _project(
        self,
        hidden_states: flow.Tensor,
        encoder_states: Optional[flow.Tensor],
        past_key_value: Optional[Tuple[flow.Tensor, flow.Tensor]],
    ) -> Tuple[flow.Tensor, flow.Tensor, flow.Tensor, OneProcessLocal, Any]:
        """q, k, v as ``[batch, heads, len, head_size]`` (heads split over tensor parallel), the
        one-process local stretch they are in (see :class:`~libai.layers.utils.OneProcessLocal`)
        and the SBP of the projections' rows ``[batch, len, features]``."""
        fused_qkv = not (self.is_cross_attention or self.separate_query)
        rows = self.query_key_value(hidden_states) if fused_qkv else self.query(hidden_states)
        local = OneProcessLocal(self.layout, rows)
        if fused_qkv:
            query, key, value = self._heads(local.enter(rows), 3, self.num_heads)
        else:
            query = self._heads(local.enter(rows), 1, self.num_heads)[0]
        if self.is_cross_attention:
            if past_key_value is not None:
                key, value = (local.enter(self._to_here(t)) for t in past_key_value)
            else:
                if encoder_states is None:
                    raise ValueError(
                        "cross attention needs encoder_states (the encoder output), or a cached "
                        "past_key_value from an earlier call"
                    )
                fused = local.enter(self.key_value(encoder_states))
                key, value = self._heads(fused, 2, self.kv_heads)
            return query, key, value, local, _sbp_of(rows)
        if self.separate_query:
            key, value = self._heads(local.enter(self.key_value(hidden_states)), 2, self.kv_heads)
        if self.qk_norm:
            query, key = self.query_norm(query), self.key_norm(key)
        if self.rotary_embedding is not None:
            offset = 0 if past_key_value is None else int(past_key_value[0].shape[2])
            query, key = self.rotary_embedding(query, key, position_offset=offset)
        if past_key_value is not None:
            past_key, past_value = (local.enter(self._to_here(t)) for t in past_key_value)
            key = flow.cat([past_key, key], dim=2)
            value = flow.cat([past_value, value], dim=2)
        return query, key, value, local, _sbp_of(rows)

    def _heads(self, fused: flow.Tensor, parts: int, heads: int) -> Tuple[flow.Tensor, ...]:
        """``[b, s, heads*parts*d]`` laid out per head -> ``parts`` tensors ``[b, heads, s, d]``."""
        batch, seq = fused.shape[0], fused.shape[1]
        per_head = fused.view(batch, seq, heads, parts * self.head_size)
        per_head = per_head.permute(0, 2, 1, 3)
        if parts == 1:
            return (per_head,)
        return tuple(flow.chunk(per_head, parts, dim=-1))

    def _grouped_products(self) -> bool:
        """Whether to multiply each key/value head by its whole group of query heads at once
        instead of repeating it per query head: with every grouped-query attention.

        Repeating copies every key and value ``heads / kv_heads`` times, forward, and sums the
        copies back, backward: at each decoded token the whole cache (Llama with 8 heads
        sharing 2, batch 8 beams 3: 24 rows of it per layer), and in a tiny Llama's training
        step a tenth of its CPU time (expand, permute and their reduction). One product per
        key/value head reads each once. Global tensors split over tensor-parallel heads stay
        split: ``kv_heads`` is a multiple of the tensor-parallel size, so the grouping reshape
        keeps each rank's heads on that rank (OneFlow infers ``split(1)`` through it)."""
        return self.num_heads != self.kv_heads

    def _in_groups(self, per_head: flow.Tensor, shared: flow.Tensor,
                   transpose_shared: bool = False) -> flow.Tensor:
        """The product of ``per_head`` ``[b, heads, q, n]`` with ``shared`` ``[b, kv_heads, ...]``,
        the ``heads / kv_heads`` consecutive heads of a group stacked as the rows of one product
        (the same dot products as with the key/value heads repeated); ``[b, heads, q, m]``."""
        batch, heads, q_len = per_head.shape[0], per_head.shape[1], per_head.shape[2]
        stacked = per_head.reshape(batch, self.kv_heads, (heads // self.kv_heads) * q_len, per_head.shape[3])
        out = flow.matmul(stacked, shared, transpose_b=transpose_shared)
        return out.view(batch, heads, q_len, out.shape[-1])

    def _place_bias(self, bias: Optional[flow.Tensor]) -> Optional[flow.Tensor]:
        """The score bias on this layer's stage, split over heads like the scores."""
        if bias is None:
            return None
        if bias.ndim != 4:
            raise ValueError(
                f"position_bias must be [1|batch, heads, query_len, key_len]; got shape "
                f"{tuple(bias.shape)}"
            )
        return to_sbp(bias, self.layout, self.layer_idx, tensor_sbp=split(1))

    def _to_here(self, tensor: flow.Tensor) -> flow.Tensor:
        return to_sbp(tensor, self.layout, self.layer_idx)

    def _build_mask(
        self, attention_mask: Optional[flow.Tensor], q_len: int, k_len: int
    ) -> Optional[flow.Tensor]:
        """A boolean ``[batch|1, 1, q_len|1, k_len]`` mask (True = attend), or None."""
        mask = None
        if attention_mask is not None:
            mask = _as_4d_bool(self._to_here_whole(attention_mask), q_len, k_len)
        # one new query (a cached decoding step) is the last position and sees every key: the
        # causal mask would be all true, so it is not built (unless a window hides some)
        window_hides = self.sliding_window is not None and k_len > self.sliding_window
        if self.attn_mask_type == AttnMaskType.causal and (q_len > 1 or window_hides):
            causal = self._causal_mask(q_len, k_len)
            mask = causal if mask is None else flow.logical_and(mask, causal)
        return mask

    def _to_here_whole(self, tensor: flow.Tensor) -> flow.Tensor:
        return to_sbp(tensor, self.layout, self.layer_idx, tensor_sbp=broadcast())

    def _causal_mask(self, q_len: int, k_len: int) -> flow.Tensor:
        # query i is position (k_len - q_len + i) of the full sequence when keys are cached
        rows = arange(k_len - q_len, k_len, self.layout, self.layer_idx).view(q_len, 1)
        cols = arange(0, k_len, self.layout, self.layer_idx).view(1, k_len)
        visible = cols <= rows
        if self.sliding_window is not None:
            visible = flow.logical_and(visible, cols > rows - self.sliding_window)
        return visible.view(1, 1, q_len, k_len)

    def _masked_softmax(
        self,
        scores: flow.Tensor,
        mask: Optional[flow.Tensor],
        position_bias: Optional[flow.Tensor] = None,
    ) -> flow.Tensor:
        if self.scale_mask_softmax_fusion and mask is not None and position_bias is None:
            return flow._C.fused_scale_mask_softmax(
                scores, mask.expand(*scores.shape), fill_value=_MASK_FILL, scale=self.coeff
            )
        if self.coeff != 1.0:
            scores = scores * self.coeff
        if position_bias is not None:
            scores = scores + position_bias
        if mask is not None:
            scores = scores.masked_fill(flow.logical_not(mask), _MASK_FILL)
        return flow.softmax(scores, dim=-1)

    def _output(self, context: flow.Tensor) -> flow.Tensor:
        return output_dropout(self.output_dropout, self.dense(context), self.bias_dropout_fusion)

    def extra_repr(self) -> str:
        return (
            f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, "
            f"head_size={self.head_size}, kv_heads={self.kv_heads}, "
            f"is_cross_attention={self.is_cross_attention}, "
            f"attn_mask_type={self.attn_mask_type.value}, layer_idx={self.layer_idx}"
        )


def _sbp_of(x: flow.Tensor) -> Optional[Tuple[Any, ...]]:
    return x.sbp if x.is_global else None


def _heads_sbp(rows_sbp: Optional[Tuple[Any, ...]]) -> Optional[Tuple[Any, ...]]:
    """The SBP of ``[batch, heads, len, size]`` heads taken from ``[batch, len, features]``
    rows of SBP ``rows_sbp``: a split of the features is a split of the heads."""
    if rows_sbp is None:
        return None
    return tuple(flow.sbp.split(1) if sbp == flow.sbp.split(2) else sbp for sbp in rows_sbp)


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


def _check_window(window: Optional[int], mask_type: Union[str, AttnMaskType]) -> Optional[int]:
    if window is None:
        return None
    if _mask_type(mask_type) != AttnMaskType.causal or int(window) < 1:
        raise ValueError(f"sliding_window={window!r} needs attn_mask_type='causal' and a "
                         "window of at least one key")
    return int(window)


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


def _check_kv_heads(num_heads: int, kv_heads: int, tp: int) -> None:
    if kv_heads <= 0 or num_heads % kv_heads:
        raise ValueError(
            f"num_key_value_heads={kv_heads} must divide num_attention_heads={num_heads} "
            "(each key/value head serves a whole group of query heads)"
        )
    if kv_heads % tp:
        raise ValueError(
            f"num_key_value_heads={kv_heads} cannot be split over tensor_parallel_size={tp}; "
            f"use a key/value head count divisible by {tp}"
        )
