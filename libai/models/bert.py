"""BERT: a bidirectional encoder with masked-LM and sentence-order heads.

``BertModel`` returns ``(sequence_output [b, s, h], pooled_output [b, h] | None)``.
``BertForPreTraining`` adds the masked-LM head (tied to the word embedding) and the binary
next-sentence / sentence-order head, and owns their losses:

- ``lm_loss``: token cross entropy averaged over positions with ``loss_mask == 1``;
- ``sop_loss``: cross entropy of the binary head against ``ns_labels``.

``BertForClassification`` puts a linear classifier on the pooled output.

``attention_mask`` is ``[b, s]`` with 1 for real tokens and 0 for padding. The default
``layernorm_position="pre"`` is the Megatron/LiBai arrangement (stable when deep);
``"post"`` gives the original BERT (LayerNorm after embeddings and after each residual).
"""
from typing import Any, Dict, Mapping, Optional, Tuple

import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import LayerNorm, Linear, build_activation
from libai.models.common.losses import ClassificationLoss, LMLoss
from libai.models.language_model import LanguageModelBody, LanguageModelTask, lm_head
from libai.models.transformer import TextEmbedding, TransformerStack, block_args, init_methods

__all__ = ["BertModel", "BertForPreTraining", "BertForClassification"]

#: Keys of LiBai's BERT configs that the heads read (``configs/common/models/bert.py`` has
#: ``add_binary_head``; classification configs add ``num_labels`` / ``classifier_dropout``).
_BERT_HEAD_KEYS = ("add_binary_head", "num_labels", "classifier_dropout")


class BertModel(LanguageModelBody):
    """The BERT encoder (BERT-base: hidden 768, 12 layers, 12 heads, intermediate 3072,
    vocab 30522, 512 positions, 2 token types).

    Args:
        vocab_size, hidden_size, hidden_layers, num_attention_heads, intermediate_size: sizes.
        hidden_dropout_prob, attention_dropout_prob: dropouts.
        max_position_embeddings: learned positions.
        num_tokentypes: segment embeddings (0 for none).
        add_pooler: add the ``tanh(W · h[CLS])`` pooler.
        initializer_range, layernorm_epsilon: initialisation std and LayerNorm eps.
        embedding_dropout_prob: dropout on the embeddings (defaults to hidden_dropout_prob).
        layernorm_position: ``"pre"`` or ``"post"``.
        bias_gelu_fusion, bias_dropout_fusion, scale_mask_softmax_fusion: CUDA fusions
            (ignored on the CPU).
        apply_query_key_layer_scaling, apply_residual_post_layernorm: see TransformerLayer.
        amp_enabled: accepted for LiBai configs; AMP is applied by the engine.
        activation: non-linearity of the MLPs and of the masked-LM head's transform.

    ``from_pretrained(hf_dir)`` on each BERT class loads a Hugging Face checkpoint (which is
    post-norm: it sets ``layernorm_position="post"``); ``save_pretrained(dir)`` writes one.
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
        max_position_embeddings: int = 512,
        num_tokentypes: int = 2,
        add_pooler: bool = True,
        initializer_range: float = 0.02,
        layernorm_epsilon: float = 1e-12,
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
        super().__init__()
        init, output_init = init_methods(initializer_range, hidden_layers)
        self.activation = activation
        pre_norm = layernorm_position == "pre"
        if embedding_dropout_prob is None:
            embedding_dropout_prob = hidden_dropout_prob
        self.embeddings = self._build_embeddings(
            vocab_size, hidden_size, max_position_embeddings, num_tokentypes,
            embedding_dropout_prob, init,
            layernorm_epsilon=None if pre_norm else layernorm_epsilon, amp_enabled=amp_enabled,
        )
        self.encoder = TransformerStack(
            hidden_layers, hidden_size, intermediate_size, num_attention_heads,
            attn_mask_type=self.attn_mask_type, layernorm_position=layernorm_position,
            layernorm_epsilon=layernorm_epsilon, final_layernorm_idx=-1 if pre_norm else None,
            activation=activation, **block_args(locals(), init, output_init),
        )
        self.pooler = (
            Linear(hidden_size, hidden_size, parallel="data", init_method=init, layer_idx=-1)
            if add_pooler
            else None
        )
        self.init_method = init

    #: Self-attention masking of every block; a causal variant (RoBERTa's causal LM) sets
    #: ``"causal"`` on a subclass rather than copying the encoder.
    attn_mask_type: str = "padding"

    def _build_embeddings(self, *args: Any, **kwargs: Any) -> TextEmbedding:
        """The embedding layer (a hook: RoBERTa numbers positions from its padding id)."""
        return TextEmbedding(*args, **kwargs)

    #: LiBai's BERT configs are shared by the encoder and its heads: the heads' keys are part
    #: of the family and not an error here.
    family_keys = _BERT_HEAD_KEYS

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
    ) -> Tuple[flow.Tensor, Optional[flow.Tensor]]:
        return self._encode(self.embeddings(input_ids, tokentype_ids), attention_mask)

    def _encode(
        self, hidden: flow.Tensor, attention_mask: flow.Tensor
    ) -> Tuple[flow.Tensor, Optional[flow.Tensor]]:
        """``(sequence_output, pooled_output | None)`` of the embedded tokens."""
        sequence_output = self.encoder(hidden, attention_mask)
        pooled = None
        if self.pooler is not None:
            pooled = flow.tanh(self.pooler(sequence_output[:, 0, :]))
        return sequence_output, pooled

    def word_embedding_weight(self) -> flow.Tensor:
        return self.embeddings.word_embedding_weight()


class BertPreTrainingHeads(nn.Module):
    """Masked-LM head (dense, GELU, LayerNorm, tied logits + bias) and the binary head."""

    def __init__(
        self, vocab_size: int, hidden_size: int, init_method: Any, layernorm_epsilon: float,
        add_binary_head: bool, activation: str = "gelu",
    ) -> None:
        super().__init__()
        self.layer_idx = -1
        self.dense = Linear(hidden_size, hidden_size, parallel="data", init_method=init_method, layer_idx=-1)
        self.activation_func = build_activation(activation)
        self.layernorm = LayerNorm(hidden_size, eps=layernorm_epsilon, layer_idx=-1)
        self.lm_logits = lm_head(vocab_size, hidden_size, tied=True, bias=True)
        self.seq_relationship = (
            Linear(hidden_size, 2, parallel="data", init_method=init_method, layer_idx=-1)
            if add_binary_head
            else None
        )

    def forward(
        self, sequence_output: flow.Tensor, pooled_output: Optional[flow.Tensor],
        word_embeddings: flow.Tensor,
    ) -> Tuple[flow.Tensor, Optional[flow.Tensor]]:
        transformed = self.layernorm(self.activation_func(self.dense(sequence_output)))
        prediction_scores = self.lm_logits(transformed, word_embeddings)
        relationship = None
        if self.seq_relationship is not None and pooled_output is not None:
            relationship = self.seq_relationship(pooled_output)
        return prediction_scores, relationship


class BertForPreTraining(LanguageModelTask):
    """BERT with masked-LM and sentence-order pre-training losses.

    Config: every :class:`BertModel` setting plus ``add_binary_head`` (default True; needs
    ``add_pooler``).

    ``forward(input_ids, attention_mask, tokentype_ids=None, ns_labels=None, lm_labels=None,
    loss_mask=None)`` returns ``{"lm_loss", "sop_loss"}`` in training with ``lm_labels``
    (``sop_loss`` when the binary head and ``ns_labels`` are there), otherwise
    ``{"prediction_scores", "seq_relationship_score"}``.
    """

    @configurable
    def __init__(self, cfg: Optional[Mapping] = None, **model_args: Any) -> None:
        super().__init__()
        args, extra = self.body_arguments(cfg, model_args, BertModel, {"add_binary_head": True})
        if extra["add_binary_head"] and not args.get("add_pooler", True):
            raise ValueError("add_binary_head=True needs add_pooler=True (the head reads the pooled [CLS])")
        self.bert = BertModel(**args)
        self.cls_head = BertPreTrainingHeads(
            args["vocab_size"], args["hidden_size"], self.bert.init_method,
            args.get("layernorm_epsilon", 1e-12), extra["add_binary_head"],
            activation=self.bert.activation,
        )
        self.loss_func = LMLoss(layer_idx=-1)
        self.sop_loss_func = ClassificationLoss(layer_idx=-1)

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
        ns_labels: Optional[flow.Tensor] = None,
        lm_labels: Optional[flow.Tensor] = None,
        loss_mask: Optional[flow.Tensor] = None,
    ) -> Dict[str, flow.Tensor]:
        sequence_output, pooled = self.bert(input_ids, attention_mask, tokentype_ids)
        scores, relationship = self.cls_head(sequence_output, pooled, self.bert.word_embedding_weight())
        outputs = self.lm_outputs(scores, lm_labels, loss_mask)
        if "lm_loss" in outputs:  # training: the binary head adds its loss
            if relationship is not None and ns_labels is not None:
                outputs["sop_loss"] = self.sop_loss_func(relationship, ns_labels)
        elif relationship is not None:
            outputs["seq_relationship_score"] = relationship
        return outputs


class BertForClassification(LanguageModelTask):
    """BERT with a classifier on the pooled ``[CLS]`` output.

    Config: every :class:`BertModel` setting plus ``num_labels`` (default 2) and
    ``classifier_dropout`` (default: hidden_dropout_prob). ``add_binary_head``, which the
    pretraining config shared with LiBai's classification recipes carries, is accepted and has
    no effect here (this head is the classifier).

    ``forward(input_ids, attention_mask, tokentype_ids=None, labels=None, **batch_fields)``
    (LiBai's signature: ``ns_labels`` stand in for missing ``labels``) returns ``{"cls_loss"}``
    in training with labels, else ``{"prediction_scores", "logits"}`` (``[b, num_labels]``).
    """

    @configurable
    def __init__(self, cfg: Optional[Mapping] = None, **model_args: Any) -> None:
        super().__init__()
        args, extra = self.body_arguments(
            cfg, model_args, BertModel,
            {"num_labels": 2, "classifier_dropout": None, "add_binary_head": None},
        )
        args["add_pooler"] = True
        self.bert = BertModel(**args)
        dropout = extra["classifier_dropout"]
        self.dropout = nn.Dropout(args.get("hidden_dropout_prob", 0.1) if dropout is None else dropout)
        self.classifier = Linear(
            args["hidden_size"], extra["num_labels"], parallel="data",
            init_method=self.bert.init_method, layer_idx=-1,
        )
        self.loss_func = ClassificationLoss(layer_idx=-1)

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
        labels: Optional[flow.Tensor] = None,
        **batch_fields: Any,
    ) -> Dict[str, flow.Tensor]:
        """Classify; ``batch_fields`` takes the rest of a batch as LiBai's forward does, so a
        BERT pre-training batch (``ns_labels``, ``lm_labels``, ``loss_mask``) can be fed
        whole: without ``labels``, ``ns_labels`` are the labels, the other fields are unused.
        In evaluation the scores are returned as ``prediction_scores`` and, LiBai's name,
        ``logits``."""
        if labels is None:
            labels = batch_fields.get("ns_labels")
        _, pooled = self.bert(input_ids, attention_mask, tokentype_ids)
        logits = self.classifier(self.dropout(pooled))
        if self.training and labels is not None:
            return {"cls_loss": self.loss_func(logits, labels)}
        return {"prediction_scores": logits, "logits": logits}
