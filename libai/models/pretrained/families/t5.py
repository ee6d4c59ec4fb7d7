"""T5 and MT5: ``T5ForConditionalGeneration`` / ``MT5ForConditionalGeneration`` / ``T5Model``
<-> :class:`~libai.models.T5ForPreTraining`, :class:`~libai.models.T5Model`.

Google's T5 is libai's T5 with the Hugging Face options (see :mod:`libai.models.t5`): relative
position bias owned by the first block of each stack (``block.0...relative_attention_bias``
becomes ``encoder_position_bias`` / ``decoder_position_bias``), unscaled attention
(``softmax_scale=1.0``), scale-only RMS norms, no biases, ``d_kv`` as the head size, and the
feed-forward of ``feed_forward_proj``: ``relu`` (``wi``, ``wo``) or ``gated-gelu`` (T5 v1.1 /
MT5: ``wi_0`` activated with ``gelu_new``, ``wi_1`` linear). Separate q/k/v become libai's
per-head fused self-attention projection; the cross attention's k/v its per-head ``key_value``.
A tied head rescales the decoder output by ``d_model ** -0.5`` when ``transformers`` does (see
:func:`scales_decoder_outputs`); an untied one (T5 v1.1 / MT5 saved by transformers 4) has its
own ``lm_head.weight``.
"""
from typing import Any, Dict, List, Mapping, Tuple

from libai.models.pretrained.families.common import (
    activation_from_hf, activation_to_hf, dropout_p, require,
)
from libai.models.pretrained.mapping import FamilyMapping, Rule, Target, fused_qkv, register, same

__all__ = ["T5Mapping", "feed_forward", "scales_decoder_outputs"]


def feed_forward(cfg: Mapping[str, Any]) -> Tuple[bool, str]:
    """``(gated, libai activation)`` of ``feed_forward_proj``, read as ``transformers`` does."""
    proj = cfg.get("feed_forward_proj", "relu")
    parts = proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise ValueError(
            f"config.json sets feed_forward_proj={proj!r}; expected '<act>' or 'gated-<act>' "
            "(e.g. 'relu', 'gated-gelu')"
        )
    act = "gelu_new" if proj == "gated-gelu" else parts[-1]
    return len(parts) == 2, activation_from_hf(act, "feed_forward_proj")


def scales_decoder_outputs(cfg: Mapping[str, Any]) -> bool:
    """Whether ``transformers`` multiplies the decoder output by ``d_model ** -0.5``.

    transformers >= 5 writes ``scale_decoder_outputs`` for T5 and never scales MT5; older
    versions scale exactly when ``tie_word_embeddings`` (original T5 yes, v1.1 / MT5 no).
    """
    if "scale_decoder_outputs" in cfg:
        return bool(cfg["scale_decoder_outputs"])
    major = str(cfg.get("transformers_version", "4")).split(".")[0]
    if cfg.get("model_type") == "mt5" and major.isdigit() and int(major) >= 5:
        return False
    return bool(cfg.get("tie_word_embeddings", True))


def _attention(ours: str, hf: str, heads: int, cross: bool) -> List[Rule]:
    if cross:
        projections = [
            same(f"{ours}.query.weight", f"{hf}.q.weight"),
            fused_qkv(f"{ours}.key_value.weight", [f"{hf}.k.weight", f"{hf}.v.weight"], heads),
        ]
    else:
        projections = [fused_qkv(f"{ours}.query_key_value.weight",
                                 [f"{hf}.q.weight", f"{hf}.k.weight", f"{hf}.v.weight"], heads)]
    return projections + [same(f"{ours}.dense.weight", f"{hf}.o.weight")]


def _mlp(ours: str, hf: str, gated: bool) -> List[Rule]:
    if gated:
        inner = [same(f"{ours}.dense_h_to_4h.weight", f"{hf}.wi_0.weight"),
                 same(f"{ours}.dense_h_to_4h_linear.weight", f"{hf}.wi_1.weight")]
    else:
        inner = [same(f"{ours}.dense_h_to_4h.weight", f"{hf}.wi.weight")]
    return inner + [same(f"{ours}.dense_4h_to_h.weight", f"{hf}.wo.weight")]


@register
class T5Mapping(FamilyMapping):
    model_types = ("t5", "mt5")
    targets = {"T5Model": Target("", "lm"), "T5ForPreTraining": Target("t5_model.", "lm")}
    auto_classes = {"model": "T5Model", "seq2seq_lm": "T5ForPreTraining"}
    hf_prefix = ""
    hf_head_keys = ()

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        require(cfg, "is_encoder_decoder", True, "an encoder-decoder model")
        feed_forward(cfg)

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        gated, activation = feed_forward(cfg)
        dropout = cfg.get("dropout_rate", 0.1)
        tied = bool(cfg.get("tie_word_embeddings", True))
        return dict(
            vocab_size=cfg["vocab_size"], hidden_size=cfg["d_model"],
            hidden_layers=cfg["num_layers"],
            decoder_layers=cfg.get("num_decoder_layers") or cfg["num_layers"],
            num_attention_heads=cfg["num_heads"], head_size=cfg["d_kv"],
            intermediate_size=cfg["d_ff"],
            embedding_dropout_prob=dropout, hidden_dropout_prob=dropout,
            attention_dropout_prob=dropout,
            layernorm_epsilon=cfg.get("layer_norm_epsilon", 1e-6),
            position_embedding_type="relative",
            relative_attention_num_buckets=cfg.get("relative_attention_num_buckets", 32),
            relative_attention_max_distance=cfg.get("relative_attention_max_distance", 128),
            softmax_scale=1.0, normalization="rmsnorm", linear_bias=False,
            gated_mlp=gated, activation=activation, tie_word_embeddings=tied,
            scale_decoder_outputs=tied and scales_decoder_outputs(cfg),
        )

    def rules(self, cfg: Mapping[str, Any], target: str) -> List[Rule]:
        p = self.targets[target].prefix
        heads = cfg["num_heads"]
        gated, _ = feed_forward(cfg)
        rules = [
            same(f"{p}embeddings.word_embeddings.weight", "shared.weight"),
            same(f"{p}encoder_position_bias.relative_attention_bias.weight",
                 "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
            same(f"{p}decoder_position_bias.relative_attention_bias.weight",
                 "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
            same(f"{p}encoder.final_layernorm.weight", "encoder.final_layer_norm.weight"),
            same(f"{p}decoder.final_layernorm.weight", "decoder.final_layer_norm.weight"),
        ]
        if not cfg.get("tie_word_embeddings", True):
            rules.append(same(f"{p}lm_head.weight", "lm_head.weight"))
        for i in range(cfg["num_layers"]):
            ours, hf = f"{p}encoder.layers.{i}", f"encoder.block.{i}.layer"
            rules += [
                same(f"{ours}.input_layernorm.weight", f"{hf}.0.layer_norm.weight"),
                *_attention(f"{ours}.self_attention", f"{hf}.0.SelfAttention", heads, False),
                same(f"{ours}.post_attention_layernorm.weight", f"{hf}.1.layer_norm.weight"),
                *_mlp(f"{ours}.mlp", f"{hf}.1.DenseReluDense", gated),
            ]
        for i in range(cfg.get("num_decoder_layers") or cfg["num_layers"]):
            ours, hf = f"{p}decoder.layers.{i}", f"decoder.block.{i}.layer"
            rules += [
                same(f"{ours}.input_layernorm.weight", f"{hf}.0.layer_norm.weight"),
                *_attention(f"{ours}.self_attention", f"{hf}.0.SelfAttention", heads, False),
                same(f"{ours}.post_attention_layernorm.weight", f"{hf}.1.layer_norm.weight"),
                *_attention(f"{ours}.cross_attention", f"{hf}.1.EncDecAttention", heads, True),
                same(f"{ours}.post_cross_attention_layernorm.weight", f"{hf}.2.layer_norm.weight"),
                *_mlp(f"{ours}.mlp", f"{hf}.2.DenseReluDense", gated),
            ]
        return rules

    def tied(self, cfg: Mapping[str, Any], target: str) -> Dict[str, str]:
        copies = {"encoder.embed_tokens.weight": "shared.weight",
                  "decoder.embed_tokens.weight": "shared.weight"}
        if cfg.get("tie_word_embeddings", True):
            copies["lm_head.weight"] = "shared.weight"
        return copies

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        core = self.base_model(model)
        _check_exportable(core)
        enc, dec = core.encoder.layers, core.decoder.layers
        attn, mlp = enc[0].self_attention, enc[0].mlp
        act = activation_to_hf(mlp.activation_func.name)
        gated = bool(mlp.gated)
        if gated:
            proj = "gated-gelu" if act == "gelu_new" else f"gated-{act}"
        else:
            proj = act
        model_type = base.get("model_type", "t5")
        if core.scale_decoder_outputs:
            model_type = "t5"  # transformers >= 5 never rescales MT5's output
        arch = ("MT5ForConditionalGeneration" if model_type == "mt5"
                else "T5ForConditionalGeneration")
        bias = core.encoder_position_bias
        cfg = dict(base)
        cfg.update(
            model_type=model_type, architectures=[arch], is_encoder_decoder=True,
            vocab_size=int(core.embeddings.word_embedding_weight().shape[0]),
            d_model=int(core.hidden_size), d_kv=int(attn.head_size),
            d_ff=int(mlp.dense_h_to_4h.out_features),
            num_layers=len(enc), num_decoder_layers=len(dec), num_heads=int(attn.num_heads),
            relative_attention_num_buckets=int(bias.num_buckets),
            relative_attention_max_distance=int(bias.max_distance),
            dropout_rate=dropout_p(enc[0].self_attention.output_dropout),
            layer_norm_epsilon=float(core.encoder.final_layernorm.eps),
            feed_forward_proj=proj, dense_act_fn=act, is_gated_act=gated,
            tie_word_embeddings=bool(core.tie_word_embeddings),
        )
        if core.tie_word_embeddings:
            cfg["scale_decoder_outputs"] = bool(core.scale_decoder_outputs)
        else:
            cfg.pop("scale_decoder_outputs", None)
        return cfg


def _check_exportable(core: Any) -> None:
    """Only Google's flavour has a Hugging Face counterpart; say which option differs."""
    attn = core.encoder.layers[0].self_attention
    problems = []
    if not core.relative:
        problems.append("position_embedding_type='relative'")
    if attn.softmax_scale != 1.0:
        problems.append("softmax_scale=1.0")
    if type(core.encoder.final_layernorm).__name__ != "RMSLayerNorm":
        problems.append("normalization='rmsnorm'")
    if attn.dense.bias is not None:
        problems.append("linear_bias=False")
    if problems:
        raise ValueError(
            "this T5 is LiBai's flavour, which Hugging Face's T5 cannot compute; export needs "
            f"the T5 v1.1 options: {', '.join(problems)}"
        )
