"""Vision transformers: ``ViTForImageClassification`` <-> :class:`~libai.models.VisionTransformer`
and ``SwinForImageClassification`` <-> :class:`~libai.models.SwinTransformer`.

ViT: the class token, position embeddings (class token first) and patch projection (a conv
weight ``[dim, C, p, p]`` on both sides) copy as they are; q/k/v fuse per head; pre-norm
blocks (``layernorm_before``/``after``), a final LayerNorm and a head on the class token.
Swin: per-block relative position bias tables (``[(2w-1)², heads]``, indexed identically),
fused q/k/v, patch merging with the same 2×2 concatenation order, LayerNorm after the patch
embedding, and average pooling after the final norm.
"""
from typing import Any, Dict, List, Mapping

from libai.models.pretrained.families.common import (
    activation_from_hf, activation_to_hf, dropout_p, encoder_mlp, linear, norm, num_labels, qkv,
    require, set_labels,
)
from libai.models.pretrained.mapping import FamilyMapping, Rule, Target, register, same

__all__ = ["ViTMapping", "SwinMapping"]


@register
class ViTMapping(FamilyMapping):
    model_types = ("vit",)
    targets = {"VisionTransformer": Target("", "classifier")}
    auto_classes = {"model": "VisionTransformer"}
    hf_prefix = "vit."
    hf_head_keys = ("classifier.", "vit.pooler.")

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        require(cfg, "qkv_bias", True, "q/k/v projections with biases")
        activation_from_hf(cfg.get("hidden_act", "gelu"), "hidden_act")

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        hidden = cfg["hidden_size"]
        return dict(
            img_size=cfg["image_size"], patch_size=cfg["patch_size"],
            in_chans=cfg.get("num_channels", 3), embed_dim=hidden,
            depth=cfg["num_hidden_layers"], num_heads=cfg["num_attention_heads"],
            mlp_ratio=cfg["intermediate_size"] / hidden,
            drop_rate=cfg.get("hidden_dropout_prob", 0.0),
            attn_drop_rate=cfg.get("attention_probs_dropout_prob", 0.0),
            num_classes=num_labels(cfg), layernorm_epsilon=cfg.get("layer_norm_eps", 1e-12),
            activation=activation_from_hf(cfg.get("hidden_act", "gelu"), "hidden_act"),
        )

    def rules(self, cfg: Mapping[str, Any], target: str) -> List[Rule]:
        heads = cfg["num_attention_heads"]
        e = "vit.embeddings"
        rules = [
            same("cls_token", f"{e}.cls_token"),
            same("pos_embed", f"{e}.position_embeddings"),
            *linear("patch_embed.proj", f"{e}.patch_embeddings.projection"),
            *norm("norm", "vit.layernorm"),
            *linear("head", "classifier"),
        ]
        for i in range(cfg["num_hidden_layers"]):
            ours, theirs = f"blocks.{i}", f"vit.encoder.layer.{i}"
            rules += [
                *norm(f"{ours}.input_layernorm", f"{theirs}.layernorm_before"),
                *norm(f"{ours}.post_attention_layernorm", f"{theirs}.layernorm_after"),
                *qkv(f"{ours}.self_attention.query_key_value",
                     [f"{theirs}.attention.attention.{n}" for n in ("query", "key", "value")],
                     heads),
                *linear(f"{ours}.self_attention.dense", f"{theirs}.attention.output.dense"),
                *encoder_mlp(ours, theirs),
            ]
        return rules

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        first = model.blocks[0]
        pe = model.patch_embed
        hidden = int(pe.proj.weight.shape[0])
        classes = int(model.head.weight.shape[0])
        cfg = dict(base)
        cfg.update(
            model_type="vit", architectures=["ViTForImageClassification"],
            image_size=int(pe.img_size[0]), patch_size=int(pe.patch_size[0]),
            num_channels=int(pe.in_chans), hidden_size=hidden,
            num_hidden_layers=len(model.blocks),
            num_attention_heads=int(first.self_attention.num_heads),
            intermediate_size=int(first.mlp.dense_h_to_4h.out_features),
            layer_norm_eps=float(model.norm.eps), qkv_bias=True,
            hidden_act=activation_to_hf(first.mlp.activation_func.name),
            hidden_dropout_prob=dropout_p(first.self_attention.output_dropout),
            attention_probs_dropout_prob=dropout_p(first.self_attention.attention_dropout),
        )
        set_labels(cfg, classes)
        return cfg


@register
class SwinMapping(FamilyMapping):
    model_types = ("swin",)
    targets = {"SwinTransformer": Target("", "classifier")}
    auto_classes = {"model": "SwinTransformer"}
    hf_prefix = "swin."
    hf_head_keys = ("classifier.", "swin.pooler.")
    ignorable = (r"relative_position_index$", r"attn_mask$")

    def check_config(self, cfg: Mapping[str, Any]) -> None:
        require(cfg, "use_absolute_embeddings", False, "no absolute position embedding")
        require(cfg, "layer_norm_eps", 1e-5, "libai's Swin LayerNorms use eps 1e-5")
        require(cfg, "hidden_act", "gelu", "the MLP uses exact GELU")

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        return dict(
            img_size=cfg["image_size"], patch_size=cfg["patch_size"],
            in_chans=cfg.get("num_channels", 3), num_classes=num_labels(cfg),
            embed_dim=cfg["embed_dim"], depths=list(cfg["depths"]),
            num_heads=list(cfg["num_heads"]), window_size=cfg["window_size"],
            mlp_ratio=cfg.get("mlp_ratio", 4.0), qkv_bias=cfg.get("qkv_bias", True),
            drop_rate=cfg.get("hidden_dropout_prob", 0.0),
            attn_drop_rate=cfg.get("attention_probs_dropout_prob", 0.0),
            drop_path_rate=cfg.get("drop_path_rate", 0.1), patch_norm=True,
        )

    def rules(self, cfg: Mapping[str, Any], target: str) -> List[Rule]:
        """Stem, head and patch merging shared by V1 and V2; each block's own tensors come
        from :meth:`attention_rules` (the part the two versions do not share)."""
        hf = self.hf_prefix  # "swin." or "swinv2."
        e = f"{hf}embeddings"
        rules = [
            *linear("patch_embed.proj", f"{e}.patch_embeddings.projection"),
            *norm("patch_embed.norm", f"{e}.norm"),
            *norm("norm", f"{hf}layernorm"),
            *linear("head", "classifier"),
        ]
        depths = list(cfg["depths"])
        for s, (depth, heads) in enumerate(zip(depths, cfg["num_heads"])):
            for j in range(depth):
                ours, theirs = f"layers.{s}.blocks.{j}", f"{hf}encoder.layers.{s}.blocks.{j}"
                rules += [
                    *norm(f"{ours}.norm1", f"{theirs}.layernorm_before"),
                    *norm(f"{ours}.norm2", f"{theirs}.layernorm_after"),
                    *self.attention_rules(cfg, f"{ours}.attn", f"{theirs}.attention.self", heads),
                    *linear(f"{ours}.attn.proj", f"{theirs}.attention.output.dense"),
                    *encoder_mlp(ours, theirs),
                ]
            if s < len(depths) - 1:
                d, t = f"layers.{s}.downsample", f"{hf}encoder.layers.{s}.downsample"
                rules += [*norm(f"{d}.norm", f"{t}.norm"),
                          same(f"{d}.reduction.weight", f"{t}.reduction.weight")]
        return rules

    def attention_rules(self, cfg: Mapping[str, Any], ours: str, theirs: str,
                        heads: int) -> List[Rule]:
        """V1's window attention: a relative position bias table and biased fused q/k/v."""
        return [
            same(f"{ours}.relative_position_bias_table", f"{theirs}.relative_position_bias_table"),
            *qkv(f"{ours}.qkv", [f"{theirs}.{n}" for n in ("query", "key", "value")], heads),
        ]

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        pe = model.patch_embed
        stages = list(model.layers)
        first = stages[0].blocks[0]
        embed = int(pe.proj.weight.shape[0])
        classes = int(model.head.weight.shape[0])
        depths = [len(st.blocks) for st in stages]
        cfg = dict(base)
        cfg.update(
            model_type="swin", architectures=["SwinForImageClassification"],
            image_size=int(pe.img_size[0]), patch_size=int(pe.patch_size[0]),
            num_channels=int(pe.in_chans), embed_dim=embed, depths=depths,
            num_layers=len(depths),
            num_heads=[int(st.blocks[0].attn.num_heads) for st in stages],
            window_size=int(max(st.blocks[0].window_size for st in stages)),
            mlp_ratio=float(first.mlp.dense_h_to_4h.out_features) / embed,
            qkv_bias=first.attn.qkv.bias is not None, layer_norm_eps=float(model.norm.eps),
            hidden_act="gelu", use_absolute_embeddings=False,
            hidden_size=int(model.num_features),
            hidden_dropout_prob=dropout_p(first.attn.proj_drop),
            attention_probs_dropout_prob=dropout_p(first.attn.attn_drop),
        )
        set_labels(cfg, classes)
        return cfg
