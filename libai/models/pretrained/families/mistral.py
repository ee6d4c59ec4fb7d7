"""Mistral: ``MistralForCausalLM`` / ``MistralModel`` <-> :class:`~libai.models.MistralForCausalLM`,
:class:`~libai.models.MistralModel`.

The tensors are Llama's, named the same (:mod:`~libai.models.pretrained.families.llama`);
``sliding_window`` (null: full attention) becomes the model's window. A per-layer attention
pattern (``layer_types`` mixing full and sliding layers) is refused: libai's Mistral slides
the same window in every layer.
"""
from typing import Any, Dict, Mapping

from libai.models.pretrained.families.llama import LlamaMapping
from libai.models.pretrained.mapping import Target, register

__all__ = ["MistralMapping"]


@register
class MistralMapping(LlamaMapping):
    model_types = ("mistral",)
    targets = {"MistralModel": Target("", "base"), "MistralForCausalLM": Target("model.", "lm")}
    auto_classes = {"model": "MistralModel", "causal_lm": "MistralForCausalLM"}

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        window = cfg.get("sliding_window")
        if window is not None and (not isinstance(window, int) or window < 1):
            raise ValueError(f"config.json sets sliding_window={window!r}; libai's Mistral "
                             "takes one window size (a positive integer) or null")
        kinds = set(cfg.get("layer_types") or [])
        expected = {"sliding_attention" if window else "full_attention"}
        if kinds and kinds != expected:
            raise ValueError(f"config.json sets layer_types={cfg['layer_types']!r} with "
                             f"sliding_window={window!r}; libai's Mistral applies one attention "
                             "kind to every layer")
        super().check_config(dict(cfg, layer_types=None))

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        return dict(super().model_args(cfg, target), sliding_window=cfg.get("sliding_window"))

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        cfg = {k: v for k, v in base.items()
               if k not in ("rope_scaling", "rope_theta", "attention_bias", "mlp_bias")}
        ours = self.base_model(model).config
        cfg.update(self.block_config(model), model_type="mistral",
                   architectures=["MistralForCausalLM"], sliding_window=ours["sliding_window"])
        return cfg
