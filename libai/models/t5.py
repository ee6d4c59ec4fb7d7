"""T5: an encoder-decoder transformer, in LiBai's (Megatron) flavour or Google's.

Encoder and decoder share one embedding module (word + learned positions). The encoder is a
padding-masked pre-norm stack; the decoder is a causal stack whose blocks also cross-attend to
the encoder output. Blocks are numbered across both: encoder block ``i`` has ``layer_idx=i``,
decoder block ``j`` has ``layer_idx=hidden_layers + j``; so a pipelined run sets
``train.dist.pipeline_num_layers = hidden_layers + decoder_layers``.

Masks are ``[b, s_q, s_k]`` with 1 where attention is allowed: ``encoder_attn_mask``
(encoder self attention), ``decoder_attn_mask`` (decoder self attention; the causal part is
added by the decoder anyway) and ``encoder_decoder_attn_mask`` (decoder queries over encoder
keys).

The defaults are LiBai's flavour: learned absolute positions, LayerNorm, biased linears, GELU
MLP, scaled attention and an LM head tied to the word embedding. Keyword options give the
Hugging Face / Google T5 family from the same blocks (see ``configs/common/models/t5.py`` for
presets):

=================================  =================================  ======================
option                             T5 (original)                      T5 v1.1 / MT5
=================================  =================================  ======================
``position_embedding_type``        ``"relative"``                     ``"relative"``
``softmax_scale``                  ``1.0``                            ``1.0``
``normalization``                  ``"rmsnorm"``                      ``"rmsnorm"``
``linear_bias``                    ``False``                          ``False``
``gated_mlp`` / ``activation``     ``False`` / ``"relu"``             ``True`` / ``"gelu_new"``
``tie_word_embeddings``            ``True``                           ``False``
``scale_decoder_outputs``          ``True``                           (only when tied)
``head_size``                      ``d_kv``                           ``d_kv``
=================================  =================================  ======================

``position_embedding_type="relative"`` drops the position table: the first encoder block and
the first decoder block each own a :class:`~libai.models.t5_position_bias.RelativePositionBias`
(bidirectional / causal buckets) whose bias every block of the stack adds to its
self-attention scores, as Hugging Face's T5 does. ``scale_decoder_outputs`` multiplies the
decoder output by ``hidden_size ** -0.5`` before a tied head (Hugging Face's rescaling).
"""
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import Linear, LMLogits, VocabEmbedding
from libai.models.common.config import merge_config, resolve_arguments
from libai.models.common.losses import LMLoss
from libai.models.pretrained.api import PretrainedMixin
from libai.models.t5_position_bias import RelativePositionBias
from libai.models.utils.generation import GenerationMixin
from libai.models.transformer import (
    TextEmbedding,
    TransformerModelMixin,
    TransformerStack,
    block_args,
    init_methods,
)

__all__ = ["T5Model", "T5ForPreTraining"]

#: The key/value cache: per decoder block ``(self_key, self_value, cross_key, cross_value)``.
Cache = Tuple[Tuple[flow.Tensor, ...], ...]

_POSITION_TYPES = ("absolute", "relative")


class TokenEmbedding(nn.Module):
    """Word embeddings and dropout, no positions (T5 with relative position bias).

    Same interface as :class:`~libai.models.transformer.TextEmbedding` for what T5 uses:
    ``forward(input_ids, past_length=0)`` and ``word_embedding_weight()``.
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        embedding_dropout_prob: float = 0.0,
        init_method: Callable = nn.init.xavier_normal_,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__()
        self.word_embeddings = VocabEmbedding(
            vocab_size, hidden_size, init_method, layer_idx=0, amp_enabled=amp_enabled
        )
        self.dropout = nn.Dropout(embedding_dropout_prob)

    def forward(self, input_ids: flow.Tensor, past_length: int = 0) -> flow.Tensor:
        return self.dropout(self.word_embeddings(input_ids))

    def word_embedding_weight(self) -> flow.Tensor:
        return self.word_embeddings.weight


class T5Model(nn.Module, TransformerModelMixin, PretrainedMixin, GenerationMixin):
    """Encoder-decoder body and LM head -> decoder logits ``[b, s_dec, vocab]``.

    Args:
        vocab_size, hidden_size, num_attention_heads, intermediate_size: sizes (T5-base:
            32128 (LiBai uses BERT's 30522 vocabulary), 768, 12, 3072).
        hidden_layers: encoder blocks (T5-base: 12).
        decoder_layers: decoder blocks (default: ``hidden_layers``).
        max_position_embeddings: learned positions.
        embedding_dropout_prob, hidden_dropout_prob, attention_dropout_prob: dropouts.
        initializer_range, layernorm_epsilon: initialisation std and LayerNorm eps.
        bias_gelu_fusion, bias_dropout_fusion, scale_mask_softmax_fusion: CUDA fusions
            (ignored on the CPU).
        apply_query_key_layer_scaling, apply_residual_post_layernorm: see TransformerLayer.
        amp_enabled: accepted for LiBai configs; AMP is applied by the engine.
        head_size: features per attention head (T5's ``d_kv``; default
            ``hidden_size // num_attention_heads``).
        position_embedding_type: ``"absolute"`` (learned table of ``max_position_embeddings``)
            or ``"relative"`` (T5's bucketed relative position bias).
        relative_attention_num_buckets, relative_attention_max_distance: the relative bias.
        softmax_scale: factor on ``q·k`` (``None``: ``1/sqrt(head_size)``; Google's T5: 1.0).
        normalization: ``"layernorm"`` or ``"rmsnorm"`` (T5's scale-only norm).
        linear_bias: biases in the attention and MLP linears, and in the tied LM head.
        gated_mlp, activation: the feed-forward (T5 v1.1 / MT5: gated ``"gelu_new"``).
        tie_word_embeddings: the LM head is the word embedding (else its own weight).
        scale_decoder_outputs: with a tied head, scale the decoder output by
            ``hidden_size ** -0.5`` first.
    """

    is_encoder_decoder = True

    @configurable
    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        hidden_layers: int,
        num_attention_heads: int,
        intermediate_size: int,
        decoder_layers: Optional[int] = None,
        max_position_embeddings: int = 512,
        embedding_dropout_prob: float = 0.0,
        hidden_dropout_prob: float = 0.0,
        attention_dropout_prob: float = 0.0,
        initializer_range: float = 0.02,
        layernorm_epsilon: float = 1e-5,
        bias_gelu_fusion: bool = False,
        bias_dropout_fusion: bool = False,
        scale_mask_softmax_fusion: bool = False,
        apply_query_key_layer_scaling: bool = False,
        apply_residual_post_layernorm: bool = False,
        amp_enabled: bool = False,
        head_size: Optional[int] = None,
        position_embedding_type: str = "absolute",
        relative_attention_num_buckets: int = 32,
        relative_attention_max_distance: int = 128,
        softmax_scale: Optional[float] = None,
        normalization: str = "layernorm",
        linear_bias: bool = True,
        gated_mlp: bool = False,
        activation: str = "gelu",
        tie_word_embeddings: bool = True,
        scale_decoder_outputs: bool = False,
    ) -> None:
        super().__init__()
        if position_embedding_type not in _POSITION_TYPES:
            raise ValueError(
                f"position_embedding_type={position_embedding_type!r}; use one of "
                f"{_POSITION_TYPES}"
            )
        decoder_layers = hidden_layers if decoder_layers is None else decoder_layers
        init, output_init = init_methods(initializer_range, hidden_layers + decoder_layers)
        self.hidden_size = hidden_size
        self.relative = position_embedding_type == "relative"
        self.tie_word_embeddings = tie_word_embeddings
        self.scale_decoder_outputs = scale_decoder_outputs and tie_word_embeddings
        shared = dict(
            layernorm_epsilon=layernorm_epsilon, head_size=head_size, softmax_scale=softmax_scale,
            normalization=normalization, bias=linear_bias, gated_mlp=gated_mlp,
            activation=activation,
        )
        shared.update(block_args(
            attention_dropout_prob=attention_dropout_prob, hidden_dropout_prob=hidden_dropout_prob,
            init_method=init, output_layer_init_method=output_init,
            bias_gelu_fusion=bias_gelu_fusion, bias_dropout_fusion=bias_dropout_fusion,
            scale_mask_softmax_fusion=scale_mask_softmax_fusion,
            apply_query_key_layer_scaling=apply_query_key_layer_scaling,
            apply_residual_post_layernorm=apply_residual_post_layernorm,
        ))
        if self.relative:
            self.embeddings = TokenEmbedding(
                vocab_size, hidden_size, embedding_dropout_prob, init, amp_enabled
            )
            bias_args = dict(num_buckets=relative_attention_num_buckets,
                             max_distance=relative_attention_max_distance,
                             num_heads=num_attention_heads, init_method=init)
            self.encoder_position_bias = RelativePositionBias(
                bidirectional=True, layer_idx=0, **bias_args
            )
            self.decoder_position_bias = RelativePositionBias(
                bidirectional=False, layer_idx=hidden_layers, **bias_args
            )
        else:
            self.embeddings = TextEmbedding(
                vocab_size, hidden_size, max_position_embeddings, num_tokentypes=0,
                embedding_dropout_prob=embedding_dropout_prob, init_method=init,
                amp_enabled=amp_enabled,
            )
        self.encoder = TransformerStack(
            hidden_layers, hidden_size, intermediate_size, num_attention_heads,
            first_layer_idx=0, final_layernorm_idx=hidden_layers - 1,
            attn_mask_type="padding", **shared,
        )
        self.decoder = TransformerStack(
            decoder_layers, hidden_size, intermediate_size, num_attention_heads,
            first_layer_idx=hidden_layers, final_layernorm_idx=-1, is_decoder=True,
            attn_mask_type="causal", **shared,
        )
        if tie_word_embeddings:
            # LiBai's flavour (biased linears) also biases the tied head, so its checkpoints
            # give its logits; Google's T5 (linear_bias=False) has no bias there.
            self.lm_head = LMLogits(vocab_size, bias=linear_bias, layer_idx=-1)
        else:  # split over the vocabulary like the tied head's logits
            self.lm_head = Linear(
                hidden_size, vocab_size, bias=False, parallel="col", init_method=init,
                layer_idx=-1,
            )

    @classmethod
    def from_config(cls, cfg: Mapping) -> Dict[str, Any]:
        return resolve_arguments(cfg, cls.__init__, cls.__name__)[0]

    def forward(
        self,
        encoder_input_ids: flow.Tensor,
        decoder_input_ids: flow.Tensor,
        encoder_attn_mask: Optional[flow.Tensor] = None,
        decoder_attn_mask: Optional[flow.Tensor] = None,
        encoder_decoder_attn_mask: Optional[flow.Tensor] = None,
        past_key_values: Optional[Cache] = None,
        use_cache: bool = False,
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Cache]]:
        """Decoder logits; with ``use_cache`` ``(logits, cache)`` (see :meth:`decode`)."""
        encoder_states = self.encode(encoder_input_ids, encoder_attn_mask)
        return self.decode(
            decoder_input_ids, encoder_states, decoder_attn_mask, encoder_decoder_attn_mask,
            past_key_values=past_key_values, use_cache=use_cache,
        )

    def encode(
        self, encoder_input_ids: flow.Tensor, encoder_attn_mask: Optional[flow.Tensor] = None
    ) -> flow.Tensor:
        """The encoder output ``[b, s_enc, hidden]`` (computed once per generation)."""
        bias = None
        if self.relative:
            length = int(encoder_input_ids.shape[1])
            bias = self.encoder_position_bias(length, length)
        return self.encoder(
            self.embeddings(encoder_input_ids), encoder_attn_mask, position_bias=bias
        )

    def decode(
        self,
        decoder_input_ids: flow.Tensor,
        encoder_states: flow.Tensor,
        decoder_attn_mask: Optional[flow.Tensor] = None,
        encoder_decoder_attn_mask: Optional[flow.Tensor] = None,
        past_key_values: Optional[Cache] = None,
        use_cache: bool = False,
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Cache]]:
        """Decoder logits ``[b, s_dec, vocab]`` over ``encoder_states``.

        ``past_key_values`` is the cache of an earlier ``use_cache=True`` call (each block's
        self-attention keys/values so far and its cross-attention projections of the encoder
        output); ``decoder_input_ids`` are then only the new tokens, positioned after the
        cached ones. With ``use_cache`` the result is ``(logits, cache)``.
        """
        past_length = 0 if past_key_values is None else int(past_key_values[0][0].shape[2])
        bias = None
        if self.relative:
            length = int(decoder_input_ids.shape[1])
            bias = self.decoder_position_bias(length, past_length + length, past_length)
        out = self.decoder(
            self.embeddings(decoder_input_ids, past_length=past_length), decoder_attn_mask,
            encoder_states=encoder_states, encoder_attention_mask=encoder_decoder_attn_mask,
            past_key_values=past_key_values, use_cache=use_cache, position_bias=bias,
        )
        decoder_states, presents = out if use_cache else (out, None)
        logits = self._logits(decoder_states)
        return (logits, presents) if use_cache else logits

    def _logits(self, decoder_states: flow.Tensor) -> flow.Tensor:
        if not self.tie_word_embeddings:
            return self.lm_head(decoder_states)
        if self.scale_decoder_outputs:
            decoder_states = decoder_states * (self.hidden_size ** -0.5)
        return self.lm_head(decoder_states, self.embeddings.word_embedding_weight())

    def _generation_encode(self, input_ids, attention_mask):
        return self.encode(input_ids, attention_mask), attention_mask

    def _generation_step(self, input_ids, attention_mask, position_ids, past_key_values, encoder):
        encoder_states, encoder_mask = encoder
        return self.decode(input_ids, encoder_states, None, encoder_mask, past_key_values, True)


class T5ForPreTraining(nn.Module, TransformerModelMixin, PretrainedMixin, GenerationMixin):
    """T5 with its span-corruption LM loss (averaged over ``loss_mask == 1`` positions).

    Build with ``T5ForPreTraining(cfg)`` / ``(cfg=cfg)`` or T5Model's keyword arguments.
    ``forward(...)`` returns ``{"masked_lm_loss": scalar}`` in training with ``lm_labels``,
    else ``{"prediction_scores": logits}``.
    """

    @configurable
    def __init__(self, cfg: Optional[Mapping] = None, **model_args: Any) -> None:
        super().__init__()
        args, _ = resolve_arguments(merge_config(cfg, model_args), T5Model.__init__, "T5ForPreTraining")
        self.t5_model = T5Model(**args)
        self.loss_func = LMLoss(layer_idx=-1)

    @classmethod
    def from_config(cls, cfg: Mapping) -> Dict[str, Any]:
        return {"cfg": cfg}

    def forward(
        self,
        encoder_input_ids: flow.Tensor,
        decoder_input_ids: flow.Tensor,
        encoder_attn_mask: Optional[flow.Tensor] = None,
        decoder_attn_mask: Optional[flow.Tensor] = None,
        encoder_decoder_attn_mask: Optional[flow.Tensor] = None,
        lm_labels: Optional[flow.Tensor] = None,
        loss_mask: Optional[flow.Tensor] = None,
    ) -> Dict[str, flow.Tensor]:
        logits = self.t5_model(
            encoder_input_ids, decoder_input_ids, encoder_attn_mask, decoder_attn_mask,
            encoder_decoder_attn_mask,
        )
        if self.training and lm_labels is not None:
            return {"masked_lm_loss": self.loss_func(logits, lm_labels, loss_mask)}
        return {"prediction_scores": logits}

    is_encoder_decoder = True

    def _generation_encode(self, input_ids, attention_mask):
        return self.t5_model._generation_encode(input_ids, attention_mask)

    def _generation_step(self, input_ids, attention_mask, position_ids, past_key_values, encoder):
        return self.t5_model._generation_step(
            input_ids, attention_mask, position_ids, past_key_values, encoder
        )
