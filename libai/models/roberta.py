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

from libai.config import configurable
from libai.layers.utils import cumsum_keeping_split, to_layer
from libai.models.bert import BertModel, BertPreTrainingHeads
from libai.models.common.losses import LMLoss
from libai.models.language_model import LanguageModelTask, constructor_arguments
from libai.models.transformer import TextEmbedding

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
    ``pad_token_id`` for padding (Fairseq's and Hugging Face's numbering). The running count
    keeps ``input_ids``' batch split: OneFlow's ``cumsum`` would replicate it, and with it the
    whole model, on every data-parallel rank (see
    :func:`~libai.layers.utils.cumsum_keeping_split`)."""
    real = (input_ids != pad_token_id).to(flow.int64)
    return cumsum_keeping_split(real, dim=1) * real + pad_token_id


class RobertaEmbeddings(TextEmbedding):
    """:class:`~libai.models.TextEmbedding` whose default positions follow
    :func:`roberta_position_ids`; explicit ``position_ids`` are used as given."""

    def __init__(self, *args: Any, pad_token_id: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pad_token_id = int(pad_token_id)

    def default_position_ids(self, input_ids: flow.Tensor, past_length: int) -> flow.Tensor:
        last = self.pad_token_id + past_length + input_ids.shape[1]
        if last >= self.max_seq_length:
            raise ValueError(
                f"{input_ids.shape[1]} tokens need positions up to {last}, but RoBERTa has "
                f"{self.max_seq_length} learned positions (its numbering starts after "
                f"pad_token_id={self.pad_token_id}); use at most "
                f"{self.max_seq_length - self.pad_token_id - 1} tokens or raise "
                "max_position_embeddings"
            )
        return to_layer(roberta_position_ids(input_ids, self.pad_token_id), self.layout, 0)


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
        # BERT's arguments with RoBERTa's defaults, passed on by name; the padding id is read
        # by _build_embeddings during BERT's init
        self.pad_token_id = int(pad_token_id)
        super().__init__(**constructor_arguments(locals(), "pad_token_id"))

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
        return self._encode(hidden, attention_mask)


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


class _RobertaLM(LanguageModelTask):
    """What RoBERTa's two LMs share: the encoder (no pooler: no head reads it; causal or not,
    ``encoder_class``), the tied masked-LM head and the token loss."""

    encoder_class: type = RobertaModel

    @configurable
    def __init__(self, cfg: Optional[Mapping] = None, **model_args: Any) -> None:
        super().__init__()
        args, _ = self.body_arguments(cfg, model_args, RobertaModel)
        args["add_pooler"] = False
        self.roberta = self.encoder_class(**args)
        self.lm_head = RobertaLMHead(
            args["vocab_size"], args["hidden_size"], self.roberta.init_method,
            args.get("layernorm_epsilon", 1e-5), activation=self.roberta.activation,
        )
        self.loss_func = LMLoss(layer_idx=-1)

    def _scores(self, *encoder_inputs: Optional[flow.Tensor]) -> flow.Tensor:
        sequence_output, _ = self.roberta(*encoder_inputs)
        return self.lm_head(sequence_output, self.roberta.word_embedding_weight())


class RobertaForPreTraining(_RobertaLM):
    """RoBERTa with the masked-LM loss (LiBai's name; Hugging Face's ``RobertaForMaskedLM``).

    Config: every :class:`RobertaModel` setting (``add_pooler`` is forced off).

    ``forward(input_ids, attention_mask, tokentype_ids=None, lm_labels=None, loss_mask=None)``
    returns ``{"lm_loss"}`` in training with ``lm_labels`` (averaged where ``loss_mask`` is 1),
    otherwise ``{"prediction_scores": [b, s, vocab]}``.
    """

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
        lm_labels: Optional[flow.Tensor] = None,
        loss_mask: Optional[flow.Tensor] = None,
    ) -> Dict[str, flow.Tensor]:
        scores = self._scores(input_ids, attention_mask, tokentype_ids)
        return self.lm_outputs(scores, lm_labels, loss_mask)


class RobertaForCausalLM(_RobertaLM):
    """RoBERTa as a left-to-right LM: causal self-attention, the tied LM head, and the loss of
    predicting token ``t + 1`` from position ``t`` (Hugging Face's ``RobertaForCausalLM``).

    ``forward(input_ids, attention_mask, tokentype_ids=None, position_ids=None, labels=None,
    loss_mask=None)`` returns ``{"lm_loss"}`` in training with ``labels`` (``labels`` are
    aligned with ``input_ids``; the shift happens here; ``loss_mask`` marks label positions
    that count), otherwise ``{"prediction_scores"}``.
    """

    encoder_class = _CausalRobertaModel

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: flow.Tensor,
        tokentype_ids: Optional[flow.Tensor] = None,
        position_ids: Optional[flow.Tensor] = None,
        labels: Optional[flow.Tensor] = None,
        loss_mask: Optional[flow.Tensor] = None,
    ) -> Dict[str, flow.Tensor]:
        scores = self._scores(input_ids, attention_mask, tokentype_ids, position_ids)
        if self.training and labels is not None:  # position t predicts token t + 1
            mask = None if loss_mask is None else loss_mask[:, 1:]
            return {"lm_loss": self.loss_func(scores[:, :-1, :], labels[:, 1:], mask)}
        return {"prediction_scores": scores}
