"""Phi-3: ``Phi3ForCausalLM`` / ``Phi3Model`` <-> :class:`~libai.models.Phi3ForCausalLM`,
:class:`~libai.models.Phi3Model`.

A Phi-3 checkpoint stores each block's attention input projection as one ``qkv_proj``
(rows ``[q | k | v]``: ``heads x head_dim`` then twice ``kv_heads x head_dim``) and the MLP's
as one ``gate_up_proj`` (rows ``[gate | up]``). :meth:`Phi3Mapping.split_for_import` splits them
into Llama's ``q_proj`` / ``k_proj`` / ``v_proj`` / ``gate_proj`` / ``up_proj`` on load, so
Llama's rules apply as they are, and :meth:`Phi3Mapping.fuse_for_export` concatenates them
back on export. ``sliding_window`` is the model's window (null: full attention); the
128k-context releases' ``longrope`` scaling is refused (libai has plain rotary only).
"""
import re
from typing import Any, Dict, Mapping

import numpy as np

from libai.models.pretrained.families.common import require
from libai.models.pretrained.families.mistral import MistralMapping
from libai.models.pretrained.mapping import Target, register

__all__ = ["Phi3Mapping"]

_FUSED = re.compile(r"^(.*)\.(self_attn\.qkv_proj|mlp\.gate_up_proj)\.weight$")
_ATTN_PARTS = ("q_proj", "k_proj", "v_proj")
_MLP_PARTS = ("gate_proj", "up_proj")


@register
class Phi3Mapping(MistralMapping):
    model_types = ("phi3",)
    targets = {"Phi3Model": Target("", "base"), "Phi3ForCausalLM": Target("model.", "lm")}
    auto_classes = {"model": "Phi3Model", "causal_lm": "Phi3ForCausalLM"}

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        require(cfg, "partial_rotary_factor", 1.0, "every feature is rotated")
        super().check_config(cfg)

    def split_for_import(self, state: Dict[str, np.ndarray], cfg: Mapping[str, Any]
                         ) -> Dict[str, np.ndarray]:
        heads = cfg["num_attention_heads"]
        kv_heads = cfg.get("num_key_value_heads") or heads
        head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
        out: Dict[str, np.ndarray] = {}
        for key, array in state.items():
            match = _FUSED.match(key)
            if match is None:
                out[key] = array
                continue
            block, kind = match.groups()
            if kind == "self_attn.qkv_proj":
                q_rows, kv_rows = heads * head_dim, kv_heads * head_dim
                parts = np.split(array, [q_rows, q_rows + kv_rows], axis=0)
                names = [f"{block}.self_attn.{p}.weight" for p in _ATTN_PARTS]
            else:
                parts = np.split(array, 2, axis=0)
                names = [f"{block}.mlp.{p}.weight" for p in _MLP_PARTS]
            out.update(zip(names, parts))
        return out

    def fuse_for_export(self, state: Dict[str, np.ndarray], cfg: Mapping[str, Any]
                        ) -> Dict[str, np.ndarray]:
        out = dict(state)
        blocks = sorted({k[:-len(".self_attn.q_proj.weight")] for k in state
                         if k.endswith(".self_attn.q_proj.weight")})
        for block in blocks:
            out[f"{block}.self_attn.qkv_proj.weight"] = np.concatenate(
                [out.pop(f"{block}.self_attn.{p}.weight") for p in _ATTN_PARTS], axis=0)
            out[f"{block}.mlp.gate_up_proj.weight"] = np.concatenate(
                [out.pop(f"{block}.mlp.{p}.weight") for p in _MLP_PARTS], axis=0)
        return out

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        cfg = dict(super().hf_config(model, target, base), model_type="phi3",
                   architectures=["Phi3ForCausalLM"])
        cfg.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
        cfg["rope_parameters"] = dict(cfg["rope_parameters"], partial_rotary_factor=1.0)
        return cfg
