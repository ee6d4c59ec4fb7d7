"""GPT-2: a causal language model (pre-norm decoder-only transformer, tied LM head).

``GPTModel`` maps ``input_ids [batch, seq]`` to logits ``[batch, seq, vocab]`` (split over the
vocabulary under tensor parallelism). ``GPTForPreTraining`` adds the loss: position ``t``
predicts ``labels[:, t]``; the data pipeline supplies labels already shifted by one token.
Labels equal to -100 are ignored.

Both build from keyword arguments or from one config dict (``GPTModel(cfg)``,
``GPTForPreTraining(cfg)``, ``LazyCall(GPTForPreTraining)(cfg=cfg)``).
"""
from typing import Any, Mapping, Optional, Tuple, Union

import oneflow as flow

from libai.config import configurable
from libai.models.common.losses import GPTLoss
from libai.models.language_model import (
    Cache,
    CausalLMTask,
    LanguageModelBody,
    join_cache,
    lm_head,
    split_cache,
)
from libai.models.utils.generation import GenerationMixin
from libai.models.transformer import TextEmbedding, TransformerStack, block_args, init_methods

__all__ = ["GPTModel", "GPTForPreTraining"]

class GPTModel(LanguageModelBody, GenerationMixin):
    """The GPT-2 body and tied LM head: ``input_ids -> logits``.

    Args:
        vocab_size: vocabulary size (divisible by the tensor parallel size; GPT-2's 50257 is
            usually padded to 50304).
        hidden_size, hidden_layers, num_attention_heads, intermediate_size: sizes
            (GPT-2 small: 768, 12, 12, 3072).
        max_seq_length: learned positions (GPT-2: 1024).
        embedding_dropout_prob, attention_dropout_prob, hidden_dropout_prob: dropouts.
        layernorm_epsilon: LayerNorm eps.
        initializer_range: std of the normal initialisation.
        use_scaled_init_for_output_weights: shrink residual-branch output weights with depth.
        bias_gelu_fusion, bias_dropout_fusion, scale_mask_softmax_fusion: CUDA fusions
            (ignored on the CPU).
        apply_query_key_layer_scaling, apply_residual_post_layernorm: see TransformerLayer.
        amp_enabled: accepted for LiBai configs; AMP is applied by the engine.
        activation: the MLP non-linearity (``"gelu"``, LiBai's; ``"gelu_tanh"`` is the
            original GPT-2's, which Hugging Face checkpoints use).

    ``GPTModel.from_pretrained(hf_dir)`` builds and loads a Hugging Face GPT-2 checkpoint;
    ``model.save_pretrained(dir)`` writes one (see docs/pretrained_weights.md).
    ``model.generate(input_ids, max_new_tokens=...)`` continues prompts with Hugging Face's
    semantics over a key/value cache (see docs/generate_and_predict.md).
    """

    @configurable
    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        hidden_layers: int,
        num_attention_heads: int,
        intermediate_size: int,
        max_seq_length: int = 1024,
        embedding_dropout_prob: float = 0.0,
        attention_dropout_prob: float = 0.0,
        hidden_dropout_prob: float = 0.0,
        layernorm_epsilon: float = 1e-5,
        initializer_range: float = 0.02,
        use_scaled_init_for_output_weights: bool = True,
        bias_gelu_fusion: bool = False,
        bias_dropout_fusion: bool = False,
        scale_mask_softmax_fusion: bool = False,
        apply_query_key_layer_scaling: bool = False,
        apply_residual_post_layernorm: bool = False,
        amp_enabled: bool = False,
        activation: str = "gelu",
    ) -> None:
        super().__init__()
        init, output_init = init_methods(
            initializer_range, hidden_layers, use_scaled_init_for_output_weights
        )
        self.embeddings = TextEmbedding(
            vocab_size, hidden_size, max_seq_length, num_tokentypes=0,
            embedding_dropout_prob=embedding_dropout_prob, init_method=init,
            amp_enabled=amp_enabled,
        )
        self.transformer = TransformerStack(
            hidden_layers, hidden_size, intermediate_size, num_attention_heads,
            attn_mask_type="causal", layernorm_epsilon=layernorm_epsilon,
            final_layernorm_idx=-1, activation=activation,
            **block_args(locals(), init, output_init),
        )
        self.lm_head = lm_head(vocab_size, hidden_size, tied=True)

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: Optional[flow.Tensor] = None,
        past_key_values: Optional[Cache] = None,
        use_cache: bool = False,
        position_ids: Optional[flow.Tensor] = None,
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Cache]]:
        """Logits ``[batch, seq, vocab]`` of ``input_ids`` ``[batch, seq]``.

        For generation: ``attention_mask`` ``[batch, past + seq]`` (1 = real token, 0 =
        padding), ``past_key_values`` (the cache a previous ``use_cache=True`` call returned;
        ``input_ids`` are then only the new tokens, positioned after the cached ones unless
        ``position_ids`` says otherwise). With ``use_cache`` the result is ``(logits, cache)``.
        """
        past_length = 0 if past_key_values is None else int(past_key_values[0][0].shape[2])
        embedded = self.embeddings(input_ids, past_length=past_length, position_ids=position_ids)
        out = self.transformer(
            embedded, attention_mask, past_key_values=past_key_values, use_cache=use_cache
        )
        hidden, presents = split_cache(out, use_cache)
        logits = self.lm_head(hidden, self.embeddings.word_embedding_weight())
        return join_cache(logits, presents, use_cache)

    def _generation_step(self, input_ids, attention_mask, position_ids, past_key_values, encoder):
        return self.forward(input_ids, attention_mask, past_key_values, True, position_ids)


class GPTForPreTraining(CausalLMTask):
    """GPT-2 with its causal LM loss.

    Build with ``GPTForPreTraining(cfg)`` / ``GPTForPreTraining(cfg=cfg)`` (a dict of
    :class:`GPTModel` settings) or with GPTModel's keyword arguments directly.

    ``forward(input_ids, labels=None, attention_mask=None, past_key_values=None,
    use_cache=False, position_ids=None)`` (:meth:`CausalLMTask.forward`; the generation
    arguments are :meth:`GPTModel.forward`'s) returns ``{"lm_loss": scalar}`` in training when
    labels are given, else ``{"prediction_scores": logits}``.
    """

    @configurable
    def __init__(self, cfg: Optional[Mapping] = None, **model_args: Any) -> None:
        super().__init__()
        args, _ = self.body_arguments(cfg, model_args, GPTModel)
        self.GPT_model = GPTModel(**args)
        self.loss_func = GPTLoss(layer_idx=-1)

    def _causal_logits(self, input_ids, attention_mask, past_key_values, use_cache, position_ids):
        return self.GPT_model(input_ids, attention_mask, past_key_values, use_cache, position_ids)
