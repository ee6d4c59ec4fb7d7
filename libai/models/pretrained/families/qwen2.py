"""Qwen2: ``Qwen2ForCausalLM`` / ``Qwen2Model`` <-> :class:`~libai.models.Qwen2ForCausalLM`,
:class:`~libai.models.Qwen2Model`.

Llama's mapping (:mod:`~libai.models.pretrained.families.llama`) plus the q/k/v biases:
``q_proj.bias`` is the attention's ``query.bias``, ``k_proj.bias`` / ``v_proj.bias`` are fused
per key/value head into ``key_value.bias`` like their weights. Hugging Face's Qwen2 can slide
a window over the layers from ``max_window_layers`` on (``use_sliding_window``); no published
Qwen2 turns it on and libai's Qwen2 attends fully, so a config that does is refused.
"""
from typing import Any, Dict, List, Mapping

from libai.models.pretrained.families.llama import LlamaMapping
from libai.models.pretrained.mapping import Rule, Target, fused_qkv, register, same

__all__ = ["Qwen2Mapping"]


@register
class Qwen2Mapping(LlamaMapping):
    model_types = ("qwen2",)
    targets = {"Qwen2Model": Target("", "base"), "Qwen2ForCausalLM": Target("model.", "lm")}
    auto_classes = {"model": "Qwen2Model", "causal_lm": "Qwen2ForCausalLM"}
    hf_model_type = "qwen2"

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        if cfg.get("use_sliding_window"):
            raise ValueError(
                f"config.json sets use_sliding_window={cfg['use_sliding_window']!r} "
                f"(sliding_window={cfg.get('sliding_window')!r}, max_window_layers="
                f"{cfg.get('max_window_layers')!r}); libai's Qwen2 attends over the whole "
                "sequence in every layer: set use_sliding_window=false if the checkpoint was "
                "trained that way"
            )
        super().check_config(cfg)

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        return dict(super().model_args(cfg, target), qkv_bias=True)

    def block_rules(self, cfg: Mapping[str, Any], ours: str, hf: str) -> List[Rule]:
        kv_heads = cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
        attn, theirs = f"{ours}.self_attention", f"{hf}.self_attn"
        return [
            same(f"{attn}.query.bias", f"{theirs}.q_proj.bias"),
            fused_qkv(f"{attn}.key_value.bias", [f"{theirs}.k_proj.bias", f"{theirs}.v_proj.bias"],
                      kv_heads),
        ]

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        cfg = {k: v for k, v in base.items()
               if k not in ("rope_scaling", "rope_theta", "head_dim", "attention_bias", "mlp_bias")}
        cfg.update(self.block_config(model), model_type=self.hf_model_type,
                   architectures=[self.auto_classes["causal_lm"]], use_sliding_window=False,
                   sliding_window=None)
        layers = cfg["num_hidden_layers"]
        cfg.setdefault("max_window_layers", layers)
        cfg["layer_types"] = ["full_attention"] * layers
        return cfg
