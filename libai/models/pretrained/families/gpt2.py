"""GPT-2: ``GPT2LMHeadModel`` / ``GPT2Model`` <-> :class:`~libai.models.GPTModel`,
:class:`~libai.models.GPTForPreTraining`.

Conv1D weights are stored ``[in, out]`` (transposed here); ``c_attn`` holds ``[q | k | v]``
on its output dim and becomes libai's per-head fused projection; the LM head is tied to
``wte`` (a stored ``lm_head.weight`` must equal it); ``activation_function`` ``gelu_new`` is
libai's ``gelu_tanh``. Attention is scaled by ``1/sqrt(head_size)`` on both sides.
"""
from typing import Any, Dict, List, Mapping

from libai.models.pretrained.families.common import (
    activation_from_hf, activation_to_hf, concat_qkv, dropout_p, norm, require,
)
from libai.models.pretrained.mapping import FamilyMapping, Rule, Target, register, same, transposed

__all__ = ["GPT2Mapping"]


@register
class GPT2Mapping(FamilyMapping):
    model_types = ("gpt2",)
    targets = {"GPTModel": Target("", "lm"), "GPTForPreTraining": Target("GPT_model.", "lm")}
    auto_classes = {"model": "GPTModel", "causal_lm": "GPTForPreTraining"}
    hf_prefix = "transformer."
    hf_head_keys = ("lm_head.",)
    ignorable = (r"\.attn\.(masked_)?bias$",)

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        require(cfg, "scale_attn_weights", True, "attention scaled by 1/sqrt(head_size)")
        require(cfg, "scale_attn_by_inverse_layer_idx", False, "no per-layer score scaling")
        require(cfg, "add_cross_attention", False, "a decoder-only model")
        require(cfg, "tie_word_embeddings", True, "the LM head is the word embedding")
        activation_from_hf(cfg.get("activation_function", "gelu_new"), "activation_function")

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        hidden = cfg["n_embd"]
        return dict(
            vocab_size=cfg["vocab_size"], hidden_size=hidden, hidden_layers=cfg["n_layer"],
            num_attention_heads=cfg["n_head"],
            intermediate_size=cfg.get("n_inner") or 4 * hidden,
            max_seq_length=cfg.get("n_positions", 1024),
            embedding_dropout_prob=cfg.get("embd_pdrop", 0.1),
            attention_dropout_prob=cfg.get("attn_pdrop", 0.1),
            hidden_dropout_prob=cfg.get("resid_pdrop", 0.1),
            layernorm_epsilon=cfg.get("layer_norm_epsilon", 1e-5),
            initializer_range=cfg.get("initializer_range", 0.02),
            activation=activation_from_hf(cfg.get("activation_function", "gelu_new"),
                                          "activation_function"),
        )

    def rules(self, cfg: Mapping[str, Any], target: str) -> List[Rule]:
        p = self.targets[target].prefix
        heads = cfg["n_head"]
        rules = [
            same(f"{p}embeddings.word_embeddings.weight", "transformer.wte.weight"),
            same(f"{p}embeddings.position_embeddings.weight", "transformer.wpe.weight"),
            *norm(f"{p}transformer.final_layernorm", "transformer.ln_f"),
        ]
        for i in range(cfg["n_layer"]):
            ours, hf = f"{p}transformer.layers.{i}", f"transformer.h.{i}"
            rules += [
                *norm(f"{ours}.input_layernorm", f"{hf}.ln_1"),
                *norm(f"{ours}.post_attention_layernorm", f"{hf}.ln_2"),
                concat_qkv(f"{ours}.self_attention.query_key_value.weight",
                           f"{hf}.attn.c_attn.weight", heads, transpose=True),
                concat_qkv(f"{ours}.self_attention.query_key_value.bias",
                           f"{hf}.attn.c_attn.bias", heads, transpose=False),
                transposed(f"{ours}.self_attention.dense.weight", f"{hf}.attn.c_proj.weight"),
                same(f"{ours}.self_attention.dense.bias", f"{hf}.attn.c_proj.bias"),
                transposed(f"{ours}.mlp.dense_h_to_4h.weight", f"{hf}.mlp.c_fc.weight"),
                same(f"{ours}.mlp.dense_h_to_4h.bias", f"{hf}.mlp.c_fc.bias"),
                transposed(f"{ours}.mlp.dense_4h_to_h.weight", f"{hf}.mlp.c_proj.weight"),
                same(f"{ours}.mlp.dense_4h_to_h.bias", f"{hf}.mlp.c_proj.bias"),
            ]
        return rules

    def tied(self, cfg: Mapping[str, Any], target: str) -> Dict[str, str]:
        return {"lm_head.weight": "transformer.wte.weight"}

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        core = self.base_model(model)
        words = core.embeddings.word_embeddings.weight
        layers = core.transformer.layers
        first = layers[0]
        cfg = dict(base)
        cfg.update(
            model_type="gpt2", architectures=["GPT2LMHeadModel"],
            vocab_size=int(words.shape[0]), n_embd=int(words.shape[1]),
            n_positions=int(core.embeddings.position_embeddings.weight.shape[0]),
            n_layer=len(layers), n_head=int(first.self_attention.num_heads),
            n_inner=int(first.mlp.dense_h_to_4h.out_features),
            layer_norm_epsilon=float(core.transformer.final_layernorm.eps),
            activation_function=activation_to_hf(first.mlp.activation_func.name),
            embd_pdrop=dropout_p(core.embeddings.dropout),
            attn_pdrop=dropout_p(first.self_attention.attention_dropout),
            resid_pdrop=dropout_p(first.self_attention.output_dropout),
            scale_attn_weights=True, scale_attn_by_inverse_layer_idx=False,
            tie_word_embeddings=True,
        )
        return cfg
