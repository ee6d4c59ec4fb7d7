"""The one transformer skeleton that BERT, RoBERTa, GPT-2, T5 and Llama configure.

A language model here is four parts, each parametrised by config rather than copied:

- embeddings, :class:`TextEmbedding`: word (vocabulary-parallel) + learned position (+ token
  type) embeddings, dropout, and an optional LayerNorm (post-norm models normalise embeddings);
  without a position table for models whose attention encodes positions (T5's relative bias);
- blocks, :class:`TransformerStack`: ``num_layers`` :class:`~libai.layers.TransformerLayer`
  blocks with consecutive ``layer_idx`` values, encoder or decoder, padding or causal masking,
  and a final norm for pre-norm stacks; :func:`run_blocks` is the one loop over blocks and their
  key/value cache (Llama, whose blocks sit directly in its body, runs it too);
- head and loss: :mod:`libai.models.language_model` (tied or untied LM head, the task wrapper
  that resolves a config dict and turns scores into the loss dict or the scores).

Layer indices follow one rule: embeddings at ``0``, block ``i`` of the whole model at ``i``,
the final norm / head / loss at ``-1``; the run sets ``train.dist.pipeline_num_layers`` to the
number of blocks so each index maps to a pipeline stage.
"""
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers import Embedding, LayerNorm, TransformerLayer, VocabEmbedding
from libai.layers.transformer_layer import norm_class
from libai.layers.utils import active_dropout, arange, to_layer
from libai.models.utils.weight_init import init_method_normal, scaled_init_method_normal
from libai.utils.distributed import current_layout

__all__ = [
    "TextEmbedding", "TransformerStack", "TransformerModelMixin", "init_methods", "run_blocks",
    "block_args",
]

#: One block's key/value cache: ``(self_key, self_value[, cross_key, cross_value])``.
KeyValue = Tuple[flow.Tensor, ...]


def init_methods(
    initializer_range: float, num_layers: int, scaled_output: bool = True
) -> Tuple[Callable, Callable]:
    """``(init_method, output_layer_init_method)`` for a model of ``num_layers`` blocks."""
    init = init_method_normal(initializer_range)
    if not scaled_output:
        return init, init
    return init, scaled_init_method_normal(initializer_range, num_layers)


class TextEmbedding(nn.Module):
    """Token + position (+ token type) embeddings for ``[batch, seq]`` ids.

    Args:
        vocab_size, hidden_size: table sizes.
        max_seq_length: number of learned positions; longer inputs are an error. None: no
            position table (the attention encodes positions, as T5's relative bias does).
        num_tokentypes: 0 for no token-type table (GPT, T5), 2 for BERT's segments.
        embedding_dropout_prob: dropout on the summed embeddings.
        init_method: initialiser of all tables.
        layernorm_epsilon: add a LayerNorm after the sum (post-norm models); None for none.
        amp_enabled: accepted for LiBai config compatibility (see VocabEmbedding).
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        max_seq_length: Optional[int],
        num_tokentypes: int = 0,
        embedding_dropout_prob: float = 0.0,
        init_method: Callable = nn.init.xavier_normal_,
        layernorm_epsilon: Optional[float] = None,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = 0
        self.max_seq_length = max_seq_length
        self.word_embeddings = VocabEmbedding(
            vocab_size, hidden_size, init_method, layer_idx=0, amp_enabled=amp_enabled
        )
        if max_seq_length is not None:  # else no such table (not even a None attribute)
            self.position_embeddings = Embedding(
                max_seq_length, hidden_size, init_method, layer_idx=0
            )
        self.tokentype_embeddings = (
            Embedding(num_tokentypes, hidden_size, init_method, layer_idx=0)
            if num_tokentypes > 0
            else None
        )
        self.embedding_layernorm = (
            LayerNorm(hidden_size, eps=layernorm_epsilon, layer_idx=0)
            if layernorm_epsilon is not None
            else None
        )
        self.dropout = nn.Dropout(embedding_dropout_prob)

    def forward(
        self,
        input_ids: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
        past_length: int = 0,
        position_ids: Optional[flow.Tensor] = None,
    ) -> flow.Tensor:
        """Embed ``input_ids`` ``[batch, seq]``.

        Positions are ``past_length .. past_length + seq - 1`` (``past_length`` = tokens already
        in a key/value cache; see :meth:`default_position_ids`), or ``position_ids``
        ``[batch|1, seq]`` when given: generation over left-padded prompts numbers each row's
        tokens from its first real one.
        """
        embeddings = self.word_embeddings(input_ids)
        if self.max_seq_length is not None:
            if position_ids is None:
                positions = self.default_position_ids(input_ids, past_length)
            else:
                self._check_length(past_length + input_ids.shape[1])
                positions = to_layer(position_ids, self.layout, 0)
            embeddings = embeddings + self.position_embeddings(positions)
        if self.tokentype_embeddings is not None:
            if tokentype_ids is None:
                # segment 0 everywhere; an op rather than zeros_like, which nn.Graph flags
                tokentype_ids = input_ids * 0
            embeddings = embeddings + self.tokentype_embeddings(tokentype_ids)
        if self.embedding_layernorm is not None:
            embeddings = self.embedding_layernorm(embeddings)
        return active_dropout(self.dropout, embeddings)

    def default_position_ids(self, input_ids: flow.Tensor, past_length: int) -> flow.Tensor:
        """Positions of ``input_ids`` when the caller gives none (RoBERTa numbers its own)."""
        seq_length = input_ids.shape[1]
        self._check_length(past_length + seq_length)
        return arange(past_length, past_length + seq_length, self.layout, 0).unsqueeze(0)

    def _check_length(self, total: int) -> None:
        if total > self.max_seq_length:
            raise ValueError(
                f"sequence of {total} tokens exceeds the "
                f"{self.max_seq_length} learned positions; raise max_seq_length / "
                "max_position_embeddings in the model config or shorten the inputs"
            )

    def word_embedding_weight(self) -> flow.Tensor:
        """The table the LM head ties to."""
        return self.word_embeddings.weight


class TransformerStack(nn.Module):
    """``num_layers`` blocks with consecutive layer indices, plus an optional final norm.

    Args:
        num_layers, hidden_size, ffn_hidden_size, num_attention_heads: sizes.
        first_layer_idx: ``layer_idx`` of the first block (T5's decoder starts after the
            encoder's blocks).
        final_layernorm_idx: ``layer_idx`` of the final LayerNorm, or None for no final norm
            (post-norm stacks end normalised already).
        is_decoder, attn_mask_type, layernorm_position: passed to every block.
        **layer_args: the remaining :class:`~libai.layers.TransformerLayer` arguments
            (dropouts, eps, init methods, fusions ...); ``normalization="rmsnorm"`` also
            makes the final norm an :class:`~libai.layers.RMSLayerNorm`.
    """

    def __init__(
        self,
        num_layers: int,
        hidden_size: int,
        ffn_hidden_size: int,
        num_attention_heads: int,
        *,
        first_layer_idx: int = 0,
        final_layernorm_idx: Optional[int] = -1,
        is_decoder: bool = False,
        attn_mask_type: str = "padding",
        layernorm_position: str = "pre",
        layernorm_epsilon: float = 1e-5,
        **layer_args: Any,
    ) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"a transformer needs at least one layer, got num_layers={num_layers}")
        # no layer_idx of its own: the stack spans pipeline stages, its blocks carry theirs
        self.layers = nn.ModuleList(
            [
                TransformerLayer(
                    hidden_size, ffn_hidden_size, num_attention_heads, is_decoder=is_decoder,
                    attn_mask_type=attn_mask_type, layernorm_epsilon=layernorm_epsilon,
                    layernorm_position=layernorm_position, layer_idx=first_layer_idx + i,
                    **layer_args,
                )
                for i in range(num_layers)
            ]
        )
        final_norm = norm_class(layer_args.get("normalization", "layernorm"))
        self.final_layernorm = (
            final_norm(hidden_size, eps=layernorm_epsilon, layer_idx=final_layernorm_idx)
            if final_layernorm_idx is not None
            else None
        )

    def forward(
        self,
        hidden_states: flow.Tensor,
        attention_mask: Optional[flow.Tensor] = None,
        *,
        past_key_values: Optional[Sequence[KeyValue]] = None,
        use_cache: bool = False,
        **block_inputs: Any,
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Tuple[KeyValue, ...]]]:
        """Run every block; with ``use_cache`` also return each block's key/value cache.

        ``block_inputs`` are the remaining keyword inputs of
        :meth:`~libai.layers.TransformerLayer.forward` (``encoder_states`` /
        ``encoder_attention_mask`` of a decoder, T5's additive ``position_bias`` /
        ``encoder_decoder_position_bias``); every block gets them unchanged, so the stack
        does not restate the block's inputs.

        ``past_key_values`` holds one entry per block, as a previous ``use_cache=True`` call
        returned them (see :meth:`~libai.layers.TransformerLayer.forward`); the result is then
        ``(hidden_states, presents)``. The cache is the attention layers' own interface: the
        stack only threads it through.
        """
        out = run_blocks(
            self.layers, hidden_states, attention_mask, past_key_values, use_cache, **block_inputs
        )
        hidden_states, presents = out if use_cache else (out, None)
        if self.final_layernorm is not None:
            hidden_states = self.final_layernorm(hidden_states)
        return (hidden_states, presents) if use_cache else hidden_states


def run_blocks(
    layers: Sequence[nn.Module],
    hidden_states: flow.Tensor,
    attention_mask: Optional[flow.Tensor] = None,
    past_key_values: Optional[Sequence[KeyValue]] = None,
    use_cache: bool = False,
    **block_inputs: Any,
) -> Union[flow.Tensor, Tuple[flow.Tensor, Tuple[KeyValue, ...]]]:
    """Run ``layers`` in order, threading each block's key/value cache.

    ``past_key_values`` holds one entry per block, as a previous ``use_cache=True`` run returned
    them; the result is then ``(hidden_states, presents)``. ``block_inputs`` (encoder states,
    position biases ...) go to every block unchanged.
    """
    if past_key_values is not None and len(past_key_values) != len(layers):
        raise ValueError(
            f"past_key_values has {len(past_key_values)} entries for {len(layers)} "
            "blocks; pass the cache this model returned (one entry per block)"
        )
    presents = []
    for i, layer in enumerate(layers):
        out = layer(
            hidden_states, attention_mask,
            past_key_value=None if past_key_values is None else past_key_values[i],
            use_cache=use_cache, **block_inputs,
        )
        if use_cache:
            out, present = out
            presents.append(present)
        hidden_states = out
    return (hidden_states, tuple(presents)) if use_cache else hidden_states


class TransformerModelMixin:
    """What the engine may ask of a libai transformer model."""

    def activation_checkpoint_modules(self) -> List[nn.Module]:
        """The blocks activation checkpointing wraps: every TransformerLayer, in order."""
        return [m for m in self.modules() if isinstance(m, TransformerLayer)]


#: Constructor arguments of every libai language model that go to each block unchanged
#: (``hidden_dropout_prob`` under the block's name ``output_dropout_prob``).
_BLOCK_SETTINGS = (
    "attention_dropout_prob", "bias_gelu_fusion", "bias_dropout_fusion",
    "scale_mask_softmax_fusion", "apply_query_key_layer_scaling", "apply_residual_post_layernorm",
)


def block_args(
    settings: Mapping[str, Any], init_method: Callable, output_layer_init_method: Callable
) -> Dict[str, Any]:
    """The TransformerLayer arguments a model passes through from its config.

    ``settings`` are the model constructor's arguments (its ``locals()``): the models share these
    parameter names, so the blocks' share of them is picked here by name instead of being
    restated in every model.
    """
    args = {name: settings[name] for name in _BLOCK_SETTINGS}
    return dict(
        args, output_dropout_prob=settings["hidden_dropout_prob"], init_method=init_method,
        output_layer_init_method=output_layer_init_method,
    )
