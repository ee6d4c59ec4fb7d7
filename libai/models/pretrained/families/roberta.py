"""RoBERTa: ``RobertaModel`` / ``RobertaForMaskedLM`` / ``RobertaForCausalLM`` <->
:class:`~libai.models.RobertaModel`, :class:`~libai.models.RobertaForPreTraining`,
:class:`~libai.models.RobertaForCausalLM`.

The encoder's tensors are BERT's under the ``roberta.`` prefix, so the rules are
:class:`~libai.models.pretrained.families.bert.BertMapping`'s; what differs is the config
(``pad_token_id``, which also offsets positions; one token type), the LM head's names
(``lm_head.dense`` / ``lm_head.layer_norm`` / ``lm_head.bias``, decoder tied to the word
embedding) and that the LM models have no pooler. ``is_decoder=True`` checkpoints (the causal
LM) load only into :class:`~libai.models.RobertaForCausalLM`, and the encoder-only classes
refuse them, so attention is never silently bidirectional where it was causal.
"""
from typing import Any, Dict, List, Mapping

from libai.models.pretrained.families.bert import BertMapping
from libai.models.pretrained.families.common import linear, norm, require
from libai.models.pretrained.mapping import Rule, Target, register, same

__all__ = ["RobertaMapping"]

_ARCHITECTURES = {"RobertaModel": "RobertaModel", "RobertaForPreTraining": "RobertaForMaskedLM",
                  "RobertaForCausalLM": "RobertaForCausalLM"}


@register
class RobertaMapping(BertMapping):
    model_types = ("roberta",)
    targets = {
        "RobertaModel": Target("", "base"),
        "RobertaForPreTraining": Target("roberta.", "lm"),
        "RobertaForCausalLM": Target("roberta.", "lm"),
    }
    auto_classes = {"model": "RobertaModel", "causal_lm": "RobertaForCausalLM"}
    hf_prefix = "roberta."
    hf_head_keys = ("lm_head.", "classifier.")
    ignorable = (r"position_ids$", r"token_type_ids$")

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        require(cfg, "position_embedding_type", "absolute", "learned absolute positions")
        require(cfg, "add_cross_attention", False, "no cross-attention")
        super().check_config(dict(cfg, is_decoder=False))

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        is_decoder = bool(cfg.get("is_decoder", False))
        if is_decoder != (target == "RobertaForCausalLM"):
            raise ValueError(
                f"config.json sets is_decoder={is_decoder}: load it into "
                f"{'RobertaForCausalLM' if is_decoder else 'RobertaModel or RobertaForPreTraining'}"
                f", not {target} (the attention would be "
                f"{'bidirectional' if is_decoder else 'causal'} instead)"
            )
        args = super().model_args(cfg, target)
        args.update(
            num_tokentypes=cfg.get("type_vocab_size", 1),
            layernorm_epsilon=cfg.get("layer_norm_eps", 1e-5),
            max_position_embeddings=cfg.get("max_position_embeddings", 514),
            pad_token_id=cfg.get("pad_token_id", 1),
        )
        if target != "RobertaModel":
            args.pop("add_pooler", None)
        return args

    def rules(self, cfg: Mapping[str, Any], target: str) -> List[Rule]:
        t = self.targets[target]
        rules = self.base_rules(cfg, t.prefix, "roberta.", pooler=t.head == "base")
        if t.head == "lm":
            rules += [
                *linear("lm_head.dense", "lm_head.dense"),
                *norm("lm_head.layernorm", "lm_head.layer_norm"),
                same("lm_head.lm_logits.bias", "lm_head.bias"),
            ]
        return rules

    def tied(self, cfg: Mapping[str, Any], target: str) -> Dict[str, str]:
        return {"lm_head.decoder.weight": "roberta.embeddings.word_embeddings.weight",
                "lm_head.decoder.bias": "lm_head.bias"}

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        core = self.base_model(model)
        cfg = super().hf_config(core, "BertModel", base)
        cfg.update(
            model_type="roberta", architectures=[_ARCHITECTURES[target]],
            pad_token_id=int(core.embeddings.pad_token_id),
            is_decoder=target == "RobertaForCausalLM",
        )
        cfg.setdefault("bos_token_id", 0)
        cfg.setdefault("eos_token_id", 2)
        return cfg
