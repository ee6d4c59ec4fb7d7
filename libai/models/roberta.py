"""RoBERTa: BERT's encoder with RoBERTa's position numbering and a masked-LM head only.

RoBERTa is not a new network; it is :class:`~libai.models.BertModel` with three settings
changed, so this module subclasses BERT's pieces instead of repeating them:

- positions are numbered from the padding id: a real token at index ``t`` (counting real
  tokens only) gets position ``pad_token_id + 1 + t`` and every padding token gets
  ``pad_token_id``; hence 514 learned positions for 512 tokens (:class:`RobertaEmbeddings`);
- one token type (``num_tokentypes=1``) and no next-sentence / sentence-order head;
- the LM head is BERT's (dense, GELU, LayerNorm, logits tied to the word embedding + bias)
  without the binary head (:class:`RobertaLMHead`).

``RobertaModel`` returns ``(sequence_output, pooled_output | None)`` like BERT.
``RobertaForPreTraining`` owns the masked-LM loss (``{"lm_loss"}`` in training with
``lm_labels``, else ``{"prediction_scores"}``). ``RobertaForCausalLM`` runs the same encoder
with causal self-attention and predicts the next token (``{"lm_loss"}`` with ``labels``).

Config keys are BERT's (LiBai's spellings ``layernorm_eps``, ``attention_probs_dropout_prob``,
``add_pooling_layer`` are accepted) plus ``pad_token_id``. Hugging Face checkpoints
(``RobertaModel`` / ``RobertaForMaskedLM`` / ``RobertaForCausalLM``) load with
``from_pretrained`` (post-norm, as Hugging Face's RoBERTa is).
"""
from typing import Any, Dict, Mapping, Optional, Tuple

import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.models.bert import BertModel, BertPreTrainingHeads
from libai.models.common.config import merge_config, resolve_arguments
from libai.models.common.losses import LMLoss
from libai.models.pretrained.api import PretrainedMixin
from libai.models.transformer import TextEmbedding, TransformerModelMixin

__all__ = [
    "RobertaEmbeddings",
    "RobertaForCausalLM",
    "RobertaForPreTraining",
    "RobertaLMHead",
    "RobertaModel",
    "roberta_position_ids",
]


def roberta_position_ids(input_ids: flow.Tensor, pad_token_id: int) -> flow.Tensor:
    """``[b, s]`` positions: ``pad_token_id + 1 + (index among real tokens)`` for real tokens,
    ``pad_token_id`` for padding (Fairseq's and Hugging Face's numbering)."""
    real = (input_ids != pad_token_id).to(flow.int64)
    return flow.cumsum(real, dim=1) * real + pad_token_id


class RobertaEmbeddings(TextEmbedding):
    """:class:`~libai.models.TextEmbedding` whose default positions follow
    :func:`roberta_position_ids`; explicit ``position_ids`` are used as given."""

    def __init__(self, *args: Any, pad_token_id: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pad_token_id = int(pad_token_id)

    def forward(
        self,
        input_ids: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
        past_length: int = 0,
        position_ids: Optional[flow.Tensor] = None,
    ) -> flow.Tensor:
        if position_ids is None:
            last = self.pad_token_id + past_length + input_ids.shape[1]
            if last >= self.max_seq_length:
                raise ValueError(
                    f"{input_ids.shape[1]} tokens need positions up to {last}, but RoBERTa has "
                    f"{self.max_seq_length} learned positions (its numbering starts after "
                    f"pad_token_id={self.pad_token_id}); use at most "
                    f"{self.max_seq_length - self.pad_token_id - 1} tokens or raise "
                    "max_position_embeddings"
                )
            position_ids = roberta_position_ids(input_ids, self.pad_token_id)
        # explicit base call: inside nn.Graph ``self`` is a proxy, which zero-argument super() rejects
        return TextEmbedding.forward(self, input_ids, tokentype_ids, position_ids=position_ids)


class RobertaModel(BertModel):
    """The RoBERTa encoder (RoBERTa-base: hidden 768, 12 layers, 12 heads, intermediate 3072,
    vocab 50265, 514 positions, 1 token type, LayerNorm eps 1e-5, pad id 1).

    Args: those of :class:`~libai.models.BertModel` (with RoBERTa's defaults) plus
        ``pad_token_id``: the padding id, which also offsets the position numbering.

    ``forward(input_ids, attention_mask, tokentype_ids=None, position_ids=None)``.
    """

    @configurable
    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        hidden_layers: int,
        num_attention_heads: int,
        intermediate_size: int,
        hidden_dropout_prob: float = 0.1,
        attention_dropout_prob: float = 0.1,
        max_position_embeddings: int = 514,
        num_tokentypes: int = 1,
        add_pooler: bool = True,
        initializer_range: float = 0.02,
        layernorm_epsilon: float = 1e-5,
        pad_token_id: int = 1,
        embedding_dropout_prob: Optional[float] = None,
        layernorm_position: str = "pre",
        bias_gelu_fusion: bool = False,
        bias_dropout_fusion: bool = False,
        scale_mask_softmax_fusion: bool = False,
        apply_query_key_layer_scaling: bool = False,
        apply_residual_post_layernorm: bool = False,
        amp_enabled: bool = False,
        activation: str = "gelu",
    ) -> None:
        self.pad_token_id = int(pad_token_id)  # read by _build_embeddings during BERT's init
        super().__init__(
            vocab_size, hidden_size, hidden_layers, num_attention_heads, intermediate_size,
            hidden_dropout_prob=hidden_dropout_prob, attention_dropout_prob=attention_dropout_prob,
            max_position_embeddings=max_position_embeddings, num_tokentypes=num_tokentypes,
            add_pooler=add_pooler, initializer_range=initializer_range,
            layernorm_epsilon=layernorm_epsilon, embedding_dropout_prob=embedding_dropout_prob,
            layernorm_position=layernorm_position, bias_gelu_fusion=bias_gelu_fusion,
            bias_dropout_fusion=bias_dropout_fusion,
            scale_mask_softmax_fusion=scale_mask_softmax_fusion,
            apply_query_key_layer_scaling=apply_query_key_layer_scaling,
            apply_residual_post_layernorm=apply_residual_post_layernorm,
            amp_enabled=amp_enabled, activation=activation,
        )

    def _build_embeddings(self, *args: Any, **kwargs: Any) -> TextEmbedding:
        return RobertaEmbeddings(*args, pad_token_id=self.pad_token_id, **kwargs)

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
        position_ids: Optional[flow.Tensor] = None,
    ) -> Tuple[flow.Tensor, Optional[flow.Tensor]]:
        hidden = self.embeddings(input_ids, tokentype_ids, position_ids=position_ids)
        sequence_output = self.encoder(hidden, attention_mask)
        pooled = None
        if self.pooler is not None:
            pooled = flow.tanh(self.pooler(sequence_output[:, 0, :]))
        return sequence_output, pooled


class _CausalRobertaModel(RobertaModel):
    """The RoBERTa encoder with causal self-attention (Hugging Face's ``is_decoder=True``)."""

    attn_mask_type = "causal"


class RobertaLMHead(BertPreTrainingHeads):
    """BERT's masked-LM head without the binary head: ``forward(h, word_embeddings) -> logits``."""

    def __init__(self, vocab_size: int, hidden_size: int, init_method: Any,
                 layernorm_epsilon: float, activation: str = "gelu") -> None:
        super().__init__(vocab_size, hidden_size, init_method, layernorm_epsilon,
                         add_binary_head=False, activation=activation)

    def forward(  # type: ignore[override]
        self, sequence_output: flow.Tensor, word_embeddings: flow.Tensor
    ) -> flow.Tensor:
        scores, _ = BertPreTrainingHeads.forward(self, sequence_output, None, word_embeddings)
        return scores


def _build(owner: str, cfg: Optional[Mapping], model_args: Mapping[str, Any],
           encoder: type) -> Tuple[RobertaModel, RobertaLMHead]:
    """The encoder (no pooler: no head reads it) and the tied LM head of a RoBERTa LM."""
    args, _ = resolve_arguments(merge_config(cfg, model_args), RobertaModel.__init__, owner)
    args["add_pooler"] = False
    roberta = encoder(**args)
    head = RobertaLMHead(args["vocab_size"], args["hidden_size"], roberta.init_method,
                         args.get("layernorm_epsilon", 1e-5), activation=roberta.activation)
    return roberta, head


class RobertaForPreTraining(nn.Module, TransformerModelMixin, PretrainedMixin):
    """RoBERTa with the masked-LM loss (LiBai's name; Hugging Face's ``RobertaForMaskedLM``).

    Config: every :class:`RobertaModel` setting (``add_pooler`` is forced off).

    ``forward(input_ids, attention_mask, tokentype_ids=None, lm_labels=None, loss_mask=None)``
    returns ``{"lm_loss"}`` in training with ``lm_labels`` (averaged where ``loss_mask`` is 1),
    otherwise ``{"prediction_scores": [b, s, vocab]}``.
    """

    @configurable
    def __init__(self, cfg: Optional[Mapping] = None, **model_args: Any) -> None:
        super().__init__()
        self.roberta, self.lm_head = _build("RobertaForPreTraining", cfg, model_args, RobertaModel)
        self.loss_func = LMLoss(layer_idx=-1)

    @classmethod
    def from_config(cls, cfg: Mapping) -> Dict[str, Any]:
        return {"cfg": cfg}

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
        lm_labels: Optional[flow.Tensor] = None,
        loss_mask: Optional[flow.Tensor] = None,
    ) -> Dict[str, flow.Tensor]:
        sequence_output, _ = self.roberta(input_ids, attention_mask, tokentype_ids)
        scores = self.lm_head(sequence_output, self.roberta.word_embedding_weight())
        if self.training and lm_labels is not None:
            return {"lm_loss": self.loss_func(scores, lm_labels, loss_mask)}
        return {"prediction_scores": scores}


class RobertaForCausalLM(nn.Module, TransformerModelMixin, PretrainedMixin):
    """RoBERTa as a left-to-right LM: causal self-attention, the tied LM head, and the loss of
    predicting token ``t + 1`` from position ``t`` (Hugging Face's ``RobertaForCausalLM``).

    ``forward(input_ids, attention_mask, tokentype_ids=None, position_ids=None, labels=None,
    loss_mask=None)`` returns ``{"lm_loss"}`` in training with ``labels`` (``labels`` are
    aligned with ``input_ids``; the shift happens here; ``loss_mask`` marks label positions
    that count), otherwise ``{"prediction_scores"}``.
    """

    @configurable
    def __init__(self, cfg: Optional[Mapping] = None, **model_args: Any) -> None:
        super().__init__()
        self.roberta, self.lm_head = _build("RobertaForCausalLM", cfg, model_args,
                                            _CausalRobertaModel)
        self.loss_func = LMLoss(layer_idx=-1)

    @classmethod
    def from_config(cls, cfg: Mapping) -> Dict[str, Any]:
        return {"cfg": cfg}

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
        position_ids: Optional[flow.Tensor] = None,
        labels: Optional[flow.Tensor] = None,
        loss_mask: Optional[flow.Tensor] = None,
    ) -> Dict[str, flow.Tensor]:
        sequence_output, _ = self.roberta(input_ids, attention_mask, tokentype_ids, position_ids)
        scores = self.lm_head(sequence_output, self.roberta.word_embedding_weight())
        if self.training and labels is not None:
            mask = None if loss_mask is None else loss_mask[:, 1:]
            return {"lm_loss": self.loss_func(scores[:, :-1, :], labels[:, 1:], mask)}
        return {"prediction_scores": scores}
