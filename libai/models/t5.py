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
from libai.models.common.losses import LMLoss
from libai.models.language_model import (
    Cache,  # here per decoder block: (self_key, self_value, cross_key, cross_value)
    LanguageModelBody,
    LanguageModelTask,
    join_cache,
    lm_head,
    lm_logits,
    split_cache,
)
from libai.models.t5_position_bias import RelativePositionBias
from libai.models.utils.generation import GenerationMixin
from libai.models.transformer import TextEmbedding, TransformerStack, block_args, init_methods

__all__ = ["T5Model", "T5ForPreTraining"]

_POSITION_TYPES = ("absolute", "relative")


class TokenEmbedding(TextEmbedding):
    """Word embeddings and dropout, no positions (T5 with relative position bias): a
    :class:`~libai.models.transformer.TextEmbedding` without position or token-type tables."""

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        embedding_dropout_prob: float = 0.0,
        init_method: Callable = nn.init.xavier_normal_,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__(
            vocab_size, hidden_size, max_seq_length=None, num_tokentypes=0,
            embedding_dropout_prob=embedding_dropout_prob, init_method=init_method,
            amp_enabled=amp_enabled,
        )


class T5Model(LanguageModelBody, GenerationMixin):
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
        self._build_embeddings(
            vocab_size, hidden_size, max_position_embeddings, embedding_dropout_prob, init,
            amp_enabled, num_heads=num_attention_heads, decoder_first_layer=hidden_layers,
            num_buckets=relative_attention_num_buckets,
            max_distance=relative_attention_max_distance,
        )
        block = dict(
            layernorm_epsilon=layernorm_epsilon, head_size=head_size, softmax_scale=softmax_scale,
            normalization=normalization, bias=linear_bias, gated_mlp=gated_mlp,
            activation=activation, **block_args(locals(), init, output_init),
        )
        self._build_stacks(
            hidden_layers, decoder_layers, hidden_size, intermediate_size, num_attention_heads,
            block,
        )
        # LiBai's flavour (biased linears) also biases the tied head, so its checkpoints give
        # its logits; Google's T5 (linear_bias=False) has no bias there.
        self.lm_head = lm_head(
            vocab_size, hidden_size, tied=tie_word_embeddings, bias=linear_bias, init_method=init
        )

    def _build_embeddings(
        self, vocab_size: int, hidden_size: int, max_position_embeddings: int,
        dropout: float, init: Callable, amp_enabled: bool, *, num_heads: int,
        decoder_first_layer: int, num_buckets: int, max_distance: int,
    ) -> None:
        """How tokens and their positions enter: learned absolute positions in the embedding,
        or (relative) word embeddings only plus one position bias per stack, owned by its
        first block's stage."""
        if not self.relative:
            self.embeddings = TextEmbedding(
                vocab_size, hidden_size, max_position_embeddings, num_tokentypes=0,
                embedding_dropout_prob=dropout, init_method=init, amp_enabled=amp_enabled,
            )
            return
        self.embeddings = TokenEmbedding(vocab_size, hidden_size, dropout, init, amp_enabled)
        bias_args = dict(num_buckets=num_buckets, max_distance=max_distance,
                         num_heads=num_heads, init_method=init)
        self.encoder_position_bias = RelativePositionBias(
            bidirectional=True, layer_idx=0, **bias_args
        )
        self.decoder_position_bias = RelativePositionBias(
            bidirectional=False, layer_idx=decoder_first_layer, **bias_args
        )

    def _build_stacks(
        self, encoder_layers: int, decoder_layers: int, hidden_size: int,
        intermediate_size: int, num_heads: int, block: Dict[str, Any],
    ) -> None:
        """The padding-masked encoder and the causal, cross-attending decoder; their blocks are
        numbered across both (decoder block ``j`` at ``encoder_layers + j``)."""
        self.encoder = TransformerStack(
            encoder_layers, hidden_size, intermediate_size, num_heads,
            first_layer_idx=0, final_layernorm_idx=encoder_layers - 1,
            attn_mask_type="padding", **block,
        )
        self.decoder = TransformerStack(
            decoder_layers, hidden_size, intermediate_size, num_heads,
            first_layer_idx=encoder_layers, final_layernorm_idx=-1, is_decoder=True,
            attn_mask_type="causal", **block,
        )

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
        decoder_states, presents = split_cache(out, use_cache)
        return join_cache(self._logits(decoder_states), presents, use_cache)

    def _logits(self, decoder_states: flow.Tensor) -> flow.Tensor:
        if not self.tie_word_embeddings:
            return lm_logits(self.lm_head, decoder_states, None)
        if self.scale_decoder_outputs:
            decoder_states = decoder_states * (self.hidden_size ** -0.5)
        return lm_logits(self.lm_head, decoder_states, self.embeddings.word_embedding_weight())

    def _generation_encode(self, input_ids, attention_mask):
        return self.encode(input_ids, attention_mask), attention_mask

    def _generation_step(self, input_ids, attention_mask, position_ids, past_key_values, encoder):
        encoder_states, encoder_mask = encoder
        return self.decode(input_ids, encoder_states, None, encoder_mask, past_key_values, True)


class T5ForPreTraining(LanguageModelTask, GenerationMixin):
    """T5 with its span-corruption LM loss (averaged over ``loss_mask == 1`` positions).

    Build with ``T5ForPreTraining(cfg)`` / ``(cfg=cfg)`` or T5Model's keyword arguments.
    ``forward(...)`` returns ``{"masked_lm_loss": scalar}`` in training with ``lm_labels``,
    else ``{"prediction_scores": logits}``.
    """

    @configurable
    def __init__(self, cfg: Optional[Mapping] = None, **model_args: Any) -> None:
        super().__init__()
        args, _ = self.body_arguments(cfg, model_args, T5Model)
        self.t5_model = T5Model(**args)
        self.loss_func = LMLoss(layer_idx=-1)

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
        return self.lm_outputs(logits, lm_labels, loss_mask, loss_key="masked_lm_loss")

    is_encoder_decoder = True

    def _generation_encode(self, input_ids, attention_mask):
        return self.t5_model._generation_encode(input_ids, attention_mask)

    def _generation_step(self, input_ids, attention_mask, position_ids, past_key_values, encoder):
        return self.t5_model._generation_step(
            input_ids, attention_mask, position_ids, past_key_values, encoder
        )
