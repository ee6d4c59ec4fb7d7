"""Qwen3: ``Qwen3ForCausalLM`` / ``Qwen3Model`` <-> :class:`~libai.models.Qwen3ForCausalLM`,
:class:`~libai.models.Qwen3Model`.

Qwen2's mapping without the q/k/v biases (Qwen3 has none: ``attention_bias`` must be false)
and with the per-head norms: ``self_attn.q_norm`` / ``k_norm`` are the attention's
``query_norm`` / ``key_norm``. ``head_dim`` comes from ``config.json``. The sliding-window
option is refused as for Qwen2.
"""
from typing import Any, Dict, List, Mapping

from libai.models.pretrained.families.llama import LlamaMapping
from libai.models.pretrained.families.qwen2 import Qwen2Mapping
from libai.models.pretrained.mapping import Rule, Target, register, same

__all__ = ["Qwen3Mapping"]


@register
class Qwen3Mapping(Qwen2Mapping):
    model_types = ("qwen3",)
    targets = {"Qwen3Model": Target("", "base"), "Qwen3ForCausalLM": Target("model.", "lm")}
    auto_classes = {"model": "Qwen3Model", "causal_lm": "Qwen3ForCausalLM"}
    hf_model_type = "qwen3"

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        return dict(LlamaMapping.model_args(self, cfg, target), qk_norm=True)

    def block_rules(self, cfg: Mapping[str, Any], ours: str, hf: str) -> List[Rule]:
        attn, theirs = f"{ours}.self_attention", f"{hf}.self_attn"
        return [same(f"{attn}.query_norm.weight", f"{theirs}.q_norm.weight"),
                same(f"{attn}.key_norm.weight", f"{theirs}.k_norm.weight")]

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        return dict(super().hf_config(model, target, base), attention_bias=False)
