"""BERT: ``BertForPreTraining`` / ``BertForSequenceClassification`` / ``BertModel`` <->
:class:`~libai.models.BertForPreTraining`, :class:`~libai.models.BertForClassification`,
:class:`~libai.models.BertModel`.

Hugging Face's BERT is post-norm (LayerNorm after the embeddings and after each residual add),
which is libai's ``layernorm_position="post"``; separate q/k/v become libai's per-head fused
projection; the masked-LM decoder is tied to the word embedding with its own bias; token
types, pooler and both heads map one to one; ``hidden_act`` drives the MLPs and the LM head's
transform alike, and ``layer_norm_eps`` every LayerNorm.
"""
from typing import Any, Dict, List, Mapping

from libai.models.pretrained.families.common import (
    activation_from_hf, activation_to_hf, dropout_p, encoder_mlp, linear, norm, num_labels, qkv,
    require, set_labels,
)
from libai.models.pretrained.mapping import FamilyMapping, Rule, Target, register, same

__all__ = ["BertMapping"]


def _classifier_args(cfg: Mapping[str, Any]) -> Dict[str, Any]:
    return dict(num_labels=num_labels(cfg), classifier_dropout=cfg.get("classifier_dropout"))


_ARCHITECTURES = {"BertModel": "BertModel", "BertForPreTraining": "BertForPreTraining",
                  "BertForClassification": "BertForSequenceClassification"}


@register
class BertMapping(FamilyMapping):
    model_types = ("bert",)
    targets = {
        "BertModel": Target("", "base"),
        "BertForPreTraining": Target("bert.", "pretraining", lambda cfg: {"add_binary_head": True}),
        "BertForClassification": Target("bert.", "classifier", _classifier_args),
    }
    auto_classes = {"model": "BertModel"}
    hf_prefix = "bert."
    hf_head_keys = ("cls.", "classifier.")
    ignorable = (r"position_ids$",)

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        require(cfg, "position_embedding_type", "absolute", "learned absolute positions")
        require(cfg, "is_decoder", False, "an encoder")
        activation_from_hf(cfg.get("hidden_act", "gelu"), "hidden_act")

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        return dict(
            vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
            hidden_layers=cfg["num_hidden_layers"], num_attention_heads=cfg["num_attention_heads"],
            intermediate_size=cfg["intermediate_size"],
            hidden_dropout_prob=cfg.get("hidden_dropout_prob", 0.1),
            attention_dropout_prob=cfg.get("attention_probs_dropout_prob", 0.1),
            max_position_embeddings=cfg.get("max_position_embeddings", 512),
            num_tokentypes=cfg.get("type_vocab_size", 2),
            initializer_range=cfg.get("initializer_range", 0.02),
            layernorm_epsilon=cfg.get("layer_norm_eps", 1e-12),
            layernorm_position="post",
            activation=activation_from_hf(cfg.get("hidden_act", "gelu"), "hidden_act"),
        )

    def base_rules(self, cfg: Mapping[str, Any], p: str, hf: str, pooler: bool = True) -> List[Rule]:
        """The encoder: libai prefix ``p``, Hugging Face prefix ``hf`` (``bert.``)."""
        heads = cfg["num_attention_heads"]
        e = f"{hf}embeddings"
        rules = [
            same(f"{p}embeddings.word_embeddings.weight", f"{e}.word_embeddings.weight"),
            same(f"{p}embeddings.position_embeddings.weight", f"{e}.position_embeddings.weight"),
            same(f"{p}embeddings.tokentype_embeddings.weight", f"{e}.token_type_embeddings.weight"),
            *norm(f"{p}embeddings.embedding_layernorm", f"{e}.LayerNorm"),
        ]
        for i in range(cfg["num_hidden_layers"]):
            ours, theirs = f"{p}encoder.layers.{i}", f"{hf}encoder.layer.{i}"
            rules += [
                *qkv(f"{ours}.self_attention.query_key_value",
                     [f"{theirs}.attention.self.{n}" for n in ("query", "key", "value")], heads),
                *linear(f"{ours}.self_attention.dense", f"{theirs}.attention.output.dense"),
                *norm(f"{ours}.post_attention_layernorm", f"{theirs}.attention.output.LayerNorm"),
                *encoder_mlp(ours, theirs),
                *norm(f"{ours}.output_layernorm", f"{theirs}.output.LayerNorm"),
            ]
        if pooler:
            rules += linear(f"{p}pooler", f"{hf}pooler.dense")
        return rules

    def rules(self, cfg: Mapping[str, Any], target: str) -> List[Rule]:
        t = self.targets[target]
        rules = self.base_rules(cfg, t.prefix, "bert.", pooler=True)
        if t.head == "pretraining":
            rules += [
                *linear("cls_head.dense", "cls.predictions.transform.dense"),
                *norm("cls_head.layernorm", "cls.predictions.transform.LayerNorm"),
                same("cls_head.lm_logits.bias", "cls.predictions.bias"),
                *linear("cls_head.seq_relationship", "cls.seq_relationship"),
            ]
        elif t.head == "classifier":
            rules += linear("classifier", "classifier")
        return rules

    def tied(self, cfg: Mapping[str, Any], target: str) -> Dict[str, str]:
        return {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
                "cls.predictions.decoder.bias": "cls.predictions.bias"}

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        core = self.base_model(model)
        layers = core.encoder.layers
        first = layers[0]
        if first.pre_norm:
            raise ValueError(
                "this BERT is pre-norm (layernorm_position='pre'); Hugging Face's BERT is "
                "post-norm, so the export would compute a different function. Export models "
                "built with layernorm_position='post' (as from_pretrained builds them)."
            )
        emb = core.embeddings
        if emb.tokentype_embeddings is None:
            raise ValueError("a BERT without token-type embeddings (num_tokentypes=0) has no "
                             "Hugging Face form")
        words = emb.word_embeddings.weight
        cfg = dict(base)
        cfg.update(
            model_type="bert", architectures=[_ARCHITECTURES[target]],
            vocab_size=int(words.shape[0]), hidden_size=int(words.shape[1]),
            num_hidden_layers=len(layers), num_attention_heads=int(first.self_attention.num_heads),
            intermediate_size=int(first.mlp.dense_h_to_4h.out_features),
            max_position_embeddings=int(emb.position_embeddings.weight.shape[0]),
            type_vocab_size=int(emb.tokentype_embeddings.weight.shape[0]),
            layer_norm_eps=float(first.post_attention_layernorm.eps),
            hidden_act=activation_to_hf(first.mlp.activation_func.name),
            hidden_dropout_prob=dropout_p(first.self_attention.output_dropout),
            attention_probs_dropout_prob=dropout_p(first.self_attention.attention_dropout),
            position_embedding_type="absolute", tie_word_embeddings=True,
        )
        if target == "BertForClassification":
            set_labels(cfg, int(model.classifier.weight.shape[0]))
        return cfg
