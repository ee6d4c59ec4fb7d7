"""Gemma: ``GemmaForCausalLM`` / ``GemmaModel`` <-> :class:`~libai.models.GemmaForCausalLM`,
:class:`~libai.models.GemmaModel`.

The tensors are Llama's, named the same (:mod:`~libai.models.pretrained.families.llama`); the
norm weights load as they are (the ``1 +`` is the model's ``norm_weight_offset``), and the
head is tied unless ``config.json`` says otherwise. ``hidden_act`` must be the tanh GELU
(``gelu_pytorch_tanh``; ``gelu``, the value of the first releases, means the same in
transformers). Gemma 2 and 3 (soft-capping, alternating sliding layers) have other
``model_type`` values and are not imported.
"""
from typing import Any, Dict, Mapping

from libai.models.pretrained.families.common import refuse_unimplemented, require
from libai.models.pretrained.families.llama import LlamaMapping
from libai.models.pretrained.mapping import Target, register

__all__ = ["GemmaMapping"]

_TANH_GELU = ("gelu_pytorch_tanh", "gelu")  # transformers reads Gemma's "gelu" as the tanh one


def _activation(cfg: Mapping[str, Any]) -> str:
    key = "hidden_activation" if cfg.get("hidden_activation") else "hidden_act"
    value = cfg.get(key, "gelu_pytorch_tanh")
    if value not in _TANH_GELU:
        raise ValueError(f"config.json sets {key}={value!r}; libai's Gemma computes GeGLU with "
                         "the tanh GELU (hidden_act='gelu_pytorch_tanh') only")
    return value


@register
class GemmaMapping(LlamaMapping):
    model_types = ("gemma",)
    targets = {"GemmaModel": Target("", "base"), "GemmaForCausalLM": Target("model.", "lm")}
    auto_classes = {"model": "GemmaModel", "causal_lm": "GemmaForCausalLM"}

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        require(cfg, "attention_bias", False, "Gemma projections have no bias")
        require(cfg, "use_bidirectional_attention", None, "libai's Gemma attends causally")
        _activation(cfg)
        refuse_unimplemented(cfg)

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        tied = bool(cfg.get("tie_word_embeddings", True))
        return dict(super().model_args(dict(cfg, tie_word_embeddings=tied), target),
                    activation="gelu_tanh", norm_weight_offset=1.0, scale_embeddings=True)

    def rules(self, cfg, target):
        return super().rules(dict(cfg, tie_word_embeddings=cfg.get("tie_word_embeddings", True)),
                             target)

    def tied(self, cfg, target):
        return super().tied(dict(cfg, tie_word_embeddings=cfg.get("tie_word_embeddings", True)),
                            target)

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        cfg = {k: v for k, v in base.items()
               if k not in ("rope_scaling", "rope_theta", "mlp_bias", "hidden_activation")}
        cfg.update(self.block_config(model), model_type="gemma",
                   architectures=["GemmaForCausalLM"], hidden_act="gelu_pytorch_tanh",
                   attention_bias=False)
        return cfg
