"""``TransformerLayer``: one encoder or decoder block built from the parallel layers.

Pre-norm (the default, as in GPT-2 and Megatron)::

    h = x + Attn(LN(x));  [decoder: h = h + CrossAttn(LN(h), enc)];  out = h + MLP(LN(h))

Post-norm (``layernorm_position="post"``, as in the original Transformer and BERT)::

    h = LN(x + Attn(x));  [decoder: h = LN(h + CrossAttn(h, enc))];  out = LN(h + MLP(h))

``apply_residual_post_layernorm=True`` (pre-norm only) takes each residual from the normalised
input instead of the raw one, the ordering of the original BERT code. Pre-norm stacks need a
final LayerNorm after the last block; models add it.

Vision models reuse the block: the attention works without a mask, ``activation`` picks the
MLP's non-linearity and ``drop_path_prob`` adds stochastic depth.

T5 v1.1 and Llama-style blocks are the same block with keyword options (defaults keep the
GPT/BERT block): ``normalization="rmsnorm"`` (:class:`RMSLayerNorm`, no shift), ``bias=False``
(no biases in any linear), ``gated_mlp=True`` (GLU feed-forward), ``softmax_scale`` /
``head_size`` / ``num_key_value_heads`` / ``rotary_embedding`` (passed to the self attention;
see :class:`MultiheadAttention`). ``forward`` takes ``position_bias`` (added to the
self-attention scores) and ``encoder_decoder_position_bias`` (added to the cross-attention
scores), T5's relative position biases.
"""
from typing import Any, Callable, Optional, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers.attention import AttnMaskType, MultiheadAttention
from libai.layers.droppath import DropPath, drop_path
from libai.layers.layer_norm import LayerNorm, RMSLayerNorm
from libai.layers.mlp import MLP
from libai.layers.rotary import RotaryEmbedding
from libai.layers.utils import to_layer
from libai.utils.distributed import current_layout

__all__ = ["TransformerLayer", "DropPath", "drop_path"]  # the latter two live in droppath

KeyValue = Tuple[flow.Tensor, ...]

_NORMALIZATIONS = ("layernorm", "rmsnorm")


class TransformerLayer(nn.Module):
    """An encoder block, or a decoder block (``is_decoder=True``: adds cross attention).

    Args:
        hidden_size, ffn_hidden_size, num_attention_heads: block sizes.
        is_decoder: add cross attention over ``encoder_states``.
        attention_dropout_prob, output_dropout_prob: dropout in attention / after each branch.
        drop_path_prob: stochastic depth probability of each residual branch.
        layernorm_epsilon: LayerNorm eps.
        init_method, output_layer_init_method: initialisers (the second is for the output
            projections of attention and MLP).
        bias_gelu_fusion, bias_dropout_fusion, scale_mask_softmax_fusion: CUDA kernel fusions,
            ignored on the CPU.
        apply_query_key_layer_scaling: see :class:`MultiheadAttention`.
        apply_residual_post_layernorm: residuals from the normalised input (pre-norm only).
        attn_mask_type: ``"padding"`` or ``"causal"`` for the self attention.
        layernorm_position: ``"pre"`` or ``"post"``.
        activation: the MLP activation.
        normalization: ``"layernorm"`` or ``"rmsnorm"`` (T5, Llama).
        bias: biases in the attention and MLP linears.
        gated_mlp: a gated (GLU) feed-forward (see :class:`MLP`).
        softmax_scale, head_size, num_key_value_heads, rotary_embedding, qkv_bias,
            sliding_window, qk_norm_eps: self-attention
            options (see :class:`MultiheadAttention`); ``softmax_scale`` and ``head_size``
            also apply to the cross attention.
        rmsnorm_weight_offset: with ``normalization="rmsnorm"``, the norms scale by
            ``offset + weight`` (Gemma: 1; see :class:`RMSLayerNorm`).
        layer_idx: this block's index; every sub-layer lives on its pipeline stage.
    """

    def __init__(
        self,
        hidden_size: int,
        ffn_hidden_size: int,
        num_attention_heads: int,
        is_decoder: bool = False,
        attention_dropout_prob: float = 0.0,
        output_dropout_prob: float = 0.0,
        drop_path_prob: float = 0.0,
        layernorm_epsilon: float = 1e-5,
        init_method: Callable[[flow.Tensor], Any] = nn.init.xavier_normal_,
        output_layer_init_method: Optional[Callable[[flow.Tensor], Any]] = None,
        bias_gelu_fusion: bool = False,
        bias_dropout_fusion: bool = False,
        scale_mask_softmax_fusion: bool = False,
        apply_query_key_layer_scaling: bool = False,
        apply_residual_post_layernorm: bool = False,
        attn_mask_type: Union[str, AttnMaskType] = "padding",
        *,
        layernorm_position: str = "pre",
        activation: str = "gelu",
        normalization: str = "layernorm",
        bias: bool = True,
        gated_mlp: bool = False,
        softmax_scale: Optional[float] = None,
        head_size: Optional[int] = None,
        num_key_value_heads: Optional[int] = None,
        rotary_embedding: Optional[RotaryEmbedding] = None,
        qkv_bias: Optional[bool] = None,
        sliding_window: Optional[int] = None,
        qk_norm_eps: Optional[float] = None,
        rmsnorm_weight_offset: float = 0.0,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        _check_arrangement(layernorm_position, normalization)
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.is_decoder = is_decoder
        self.pre_norm = layernorm_position == "pre"
        self.apply_residual_post_layernorm = apply_residual_post_layernorm and self.pre_norm
        attention_args = dict(
            attention_dropout_prob=attention_dropout_prob,
            output_dropout_prob=output_dropout_prob,
            init_method=init_method,
            output_layer_init_method=output_layer_init_method,
            bias_dropout_fusion=bias_dropout_fusion,
            scale_mask_softmax_fusion=scale_mask_softmax_fusion,
            apply_query_key_layer_scaling=apply_query_key_layer_scaling,
            bias=bias,
            softmax_scale=softmax_scale,
            head_size=head_size,
            layer_idx=layer_idx,
        )
        norm = _norm_factory(normalization, hidden_size, layernorm_epsilon, layer_idx,
                             rmsnorm_weight_offset)

        # Norm names follow their position: before a branch (pre) or after its residual (post).
        if self.pre_norm:
            self.input_layernorm = norm()
        self.self_attention = MultiheadAttention(
            hidden_size, num_attention_heads, is_cross_attention=False,
            attn_mask_type=attn_mask_type, num_key_value_heads=num_key_value_heads,
            rotary_embedding=rotary_embedding, qkv_bias=qkv_bias,
            sliding_window=sliding_window, qk_norm_eps=qk_norm_eps, **attention_args,
        )
        self.post_attention_layernorm = norm()
        if is_decoder:
            self.cross_attention = MultiheadAttention(
                hidden_size, num_attention_heads, is_cross_attention=True,
                attn_mask_type="padding", **attention_args,
            )
            self.post_cross_attention_layernorm = norm()
        self.mlp = MLP(
            hidden_size, ffn_hidden_size, output_dropout_prob, init_method,
            output_layer_init_method, bias_gelu_fusion, bias_dropout_fusion,
            activation=activation, gated=gated_mlp, bias=bias, layer_idx=layer_idx,
        )
        if not self.pre_norm:
            self.output_layernorm = norm()
        self.drop_path = DropPath(drop_path_prob)

    def forward(
        self,
        hidden_states: flow.Tensor,
        attention_mask: Optional[flow.Tensor] = None,
        encoder_states: Optional[flow.Tensor] = None,
        encoder_attention_mask: Optional[flow.Tensor] = None,
        past_key_value: Optional[KeyValue] = None,
        use_cache: bool = False,
        position_bias: Optional[flow.Tensor] = None,
        encoder_decoder_position_bias: Optional[flow.Tensor] = None,
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, KeyValue]]:
        """Run the block on ``hidden_states`` ``[batch, seq, hidden]``.

        ``past_key_value`` is the flat tuple a previous ``use_cache=True`` call returned:
        ``(self_key, self_value)`` for an encoder block, plus ``(cross_key, cross_value)`` for
        a decoder block. With ``use_cache`` the result is ``(output, presents)``.
        ``position_bias`` / ``encoder_decoder_position_bias`` are additive score biases
        ``[1|batch, heads, q_len, k_len]`` of the self / cross attention.
        """
        hidden_states = to_layer(hidden_states, self.layout, self.layer_idx)
        past = tuple(past_key_value) if past_key_value is not None else None
        if self.is_decoder and encoder_states is None and (past is None or len(past) < 4):
            raise ValueError(
                "a decoder TransformerLayer needs encoder_states for cross attention (or the "
                "cached cross key/value in past_key_value)"
            )
        presents = []

        def keep_cache(out):
            if not use_cache:
                return out
            out, present = out
            presents.extend(present)
            return out

        def self_attend(x):
            return keep_cache(self.self_attention(
                x, attention_mask, past_key_value=past[:2] if past else None,
                use_cache=use_cache, position_bias=position_bias,
            ))

        def cross_attend(x):
            return keep_cache(self.cross_attention(
                x, encoder_attention_mask, encoder_states=encoder_states,
                past_key_value=past[2:4] if past else None, use_cache=use_cache,
                position_bias=encoder_decoder_position_bias,
            ))

        norms = self._norms()
        h = self._residual(hidden_states, self_attend, norms[0])
        if self.is_decoder:
            h = self._residual(h, cross_attend, norms[1])
        output = self._residual(h, self.mlp, norms[-1])
        return (output, tuple(presents)) if use_cache else output

    def _norms(self) -> Tuple[nn.Module, ...]:
        """The norm of each branch (attention, [cross attention], MLP), in order."""
        cross = (self.post_cross_attention_layernorm,) if self.is_decoder else ()
        if self.pre_norm:
            return (self.input_layernorm, self.post_attention_layernorm) + cross
        return (self.post_attention_layernorm,) + cross + (self.output_layernorm,)

    def _residual(
        self, x: flow.Tensor, branch: Callable[[flow.Tensor], flow.Tensor], norm: nn.Module
    ) -> flow.Tensor:
        """One residual branch, normalised before (pre) or after the add (post)."""
        if not self.pre_norm:
            return norm(x + self._drop_path(branch(x)))
        normed = norm(x)
        residual = normed if self.apply_residual_post_layernorm else x
        return residual + self._drop_path(branch(normed))

    def _drop_path(self, y: flow.Tensor) -> flow.Tensor:
        """Stochastic depth on a branch's output; not called when it returns ``y`` unchanged
        (evaluation, or no drop probability), as :func:`~libai.layers.utils.active_dropout`."""
        drop = self.drop_path
        return drop(y) if drop.training and drop.drop_prob > 0 else y


def _check_arrangement(layernorm_position: str, normalization: str) -> None:
    """Fail on a norm placement or kind the block does not know, naming the valid ones."""
    if layernorm_position not in ("pre", "post"):
        raise ValueError(
            f"layernorm_position={layernorm_position!r}; use 'pre' (norm before each "
            "branch) or 'post' (norm after each residual add)"
        )
    if normalization not in _NORMALIZATIONS:
        raise ValueError(
            f"normalization={normalization!r}; use one of {_NORMALIZATIONS}"
        )


def norm_class(normalization: str) -> type:
    """The norm of ``normalization`` (``"layernorm"`` or ``"rmsnorm"``), for the blocks and the
    final norm of a stack of them."""
    return RMSLayerNorm if normalization == "rmsnorm" else LayerNorm


def _norm_factory(
    normalization: str, hidden_size: int, eps: float, layer_idx: int, weight_offset: float = 0.0
) -> Callable[[], nn.Module]:
    """A maker of the block's norms (each branch owns one)."""
    cls = norm_class(normalization)
    extra = {"weight_offset": weight_offset} if weight_offset else {}
    return lambda: cls(hidden_size, eps=eps, layer_idx=layer_idx, **extra)
