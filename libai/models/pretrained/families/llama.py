"""Llama: ``LlamaForCausalLM`` / ``LlamaModel`` <-> :class:`~libai.models.LlamaForCausalLM`,
:class:`~libai.models.LlamaModel`.

libai's Llama keeps Hugging Face's module names outside the blocks (``model.embed_tokens``,
``model.layers.N``, ``model.norm``, ``lm_head``) and inside them differs only where libai's
layers fuse: ``q_proj`` is the attention's ``query`` as it is, ``k_proj`` / ``v_proj`` become
its ``key_value`` projection laid out per key/value head (``[kv_heads, 2, head_size]`` rows, so
tensor parallelism hands each rank whole groups), ``o_proj`` is ``dense``, and the SwiGLU MLP's
``gate_proj`` / ``up_proj`` / ``down_proj`` are ``dense_h_to_4h`` / ``dense_h_to_4h_linear``
/ ``dense_4h_to_h``. Rotary embeddings use the same "rotate_half" pairing on both sides, so
the q/k weights load unchanged; there are no biases. The head is separate
(``tie_word_embeddings=false``, the fixture's and Llama-2's) or tied to the embedding.
"""
from typing import Any, Dict, List, Mapping

from libai.models.pretrained.families.common import activation_from_hf, require
from libai.models.pretrained.mapping import (
    FamilyMapping, Rule, Target, fused_qkv, register, same,
)

__all__ = ["LlamaMapping"]


def _rope_theta(cfg: Mapping[str, Any]) -> float:
    """transformers >= 5 writes ``rope_parameters.rope_theta``; older ones ``rope_theta``."""
    params = cfg.get("rope_parameters") or {}
    return float(params.get("rope_theta", cfg.get("rope_theta", 10000.0)))


def _attention_rules(ours: str, hf: str, kv_heads: int) -> List[Rule]:
    return [
        same(f"{ours}.query.weight", f"{hf}.q_proj.weight"),
        fused_qkv(f"{ours}.key_value.weight", [f"{hf}.k_proj.weight", f"{hf}.v_proj.weight"],
                  kv_heads),
    ]


@register
class LlamaMapping(FamilyMapping):
    model_types = ("llama",)
    targets = {"LlamaModel": Target("", "base"), "LlamaForCausalLM": Target("model.", "lm")}
    auto_classes = {"model": "LlamaModel", "causal_lm": "LlamaForCausalLM"}
    hf_prefix = "model."
    hf_head_keys = ("lm_head.",)
    ignorable = (r"\.rotary_emb\.inv_freq$",)

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        require(cfg, "attention_bias", False, "Llama projections have no bias")
        require(cfg, "mlp_bias", False, "Llama's MLP has no bias")
        act = activation_from_hf(cfg.get("hidden_act", "silu"), "hidden_act")
        if act != "silu":
            raise ValueError(f"config.json sets hidden_act={cfg.get('hidden_act')!r}; libai's "
                             "Llama computes SwiGLU (hidden_act='silu') only")
        rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
        kind = rope.get("rope_type", rope.get("type", "default"))
        if kind != "default":
            raise ValueError(f"config.json sets rope type {kind!r}; libai's Llama supports only "
                             "plain rotary embeddings (rope_type='default', no scaling)")
        hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
        head_dim = cfg.get("head_dim") or hidden // heads
        if head_dim * heads != hidden:
            raise ValueError(f"config.json sets head_dim={head_dim} with {heads} heads of width "
                             f"{hidden}; libai's Llama needs head_dim = hidden_size / heads")

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        return dict(
            vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
            hidden_layers=cfg["num_hidden_layers"], num_attention_heads=cfg["num_attention_heads"],
            num_key_value_heads=cfg.get("num_key_value_heads") or cfg["num_attention_heads"],
            intermediate_size=cfg["intermediate_size"],
            max_position_embeddings=cfg.get("max_position_embeddings", 2048),
            rms_norm_eps=cfg.get("rms_norm_eps", 1e-6), rope_theta=_rope_theta(cfg),
            initializer_range=cfg.get("initializer_range", 0.02),
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            attention_dropout_prob=cfg.get("attention_dropout", 0.0),
        )

    def rules(self, cfg: Mapping[str, Any], target: str) -> List[Rule]:
        p = self.targets[target].prefix
        heads = cfg["num_attention_heads"]
        kv_heads = cfg.get("num_key_value_heads") or heads
        rules = [
            same(f"{p}embed_tokens.weight", "model.embed_tokens.weight"),
            same(f"{p}norm.weight", "model.norm.weight"),
        ]
        if target == "LlamaForCausalLM" and not cfg.get("tie_word_embeddings", False):
            rules.append(same("lm_head.weight", "lm_head.weight"))
        for i in range(cfg["num_hidden_layers"]):
            ours, hf = f"{p}layers.{i}", f"model.layers.{i}"
            rules += [
                same(f"{ours}.input_layernorm.weight", f"{hf}.input_layernorm.weight"),
                same(f"{ours}.post_attention_layernorm.weight",
                     f"{hf}.post_attention_layernorm.weight"),
                *_attention_rules(f"{ours}.self_attention", f"{hf}.self_attn", kv_heads),
                same(f"{ours}.self_attention.dense.weight", f"{hf}.self_attn.o_proj.weight"),
                same(f"{ours}.mlp.dense_h_to_4h.weight", f"{hf}.mlp.gate_proj.weight"),
                same(f"{ours}.mlp.dense_h_to_4h_linear.weight", f"{hf}.mlp.up_proj.weight"),
                same(f"{ours}.mlp.dense_4h_to_h.weight", f"{hf}.mlp.down_proj.weight"),
            ]
        return rules

    def tied(self, cfg: Mapping[str, Any], target: str) -> Dict[str, str]:
        if cfg.get("tie_word_embeddings", False):
            return {"lm_head.weight": "model.embed_tokens.weight"}
        return {}

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        ours = self.base_model(model).config
        hidden, heads = ours["hidden_size"], ours["num_attention_heads"]
        cfg = dict(base)
        cfg.pop("rope_scaling", None)
        cfg.update(
            model_type="llama", architectures=["LlamaForCausalLM"],
            vocab_size=ours["vocab_size"], hidden_size=hidden,
            intermediate_size=ours["intermediate_size"], num_hidden_layers=ours["hidden_layers"],
            num_attention_heads=heads, num_key_value_heads=ours["num_key_value_heads"],
            head_dim=hidden // heads, max_position_embeddings=ours["max_position_embeddings"],
            rms_norm_eps=ours["rms_norm_eps"], initializer_range=ours["initializer_range"],
            rope_theta=ours["rope_theta"],
            rope_parameters={"rope_theta": ours["rope_theta"], "rope_type": "default"},
            tie_word_embeddings=ours["tie_word_embeddings"], hidden_act="silu",
            attention_bias=False, mlp_bias=False, attention_dropout=ours["attention_dropout_prob"],
        )
        return cfg
