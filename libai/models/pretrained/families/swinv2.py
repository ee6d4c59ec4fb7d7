"""Swin V2: ``Swinv2ForImageClassification`` <-> :class:`~libai.models.SwinTransformerV2`.

The model's skeleton is Swin V1's, so the embedding, final norm, head, MLPs and merging
reduction map as in :class:`~libai.models.pretrained.families.vision.SwinMapping`. V2's own
tensors: q/k/v fuse per head without biases (Hugging Face's key has none) and the q and v
biases become ``q_bias`` / ``v_bias``; ``logit_scale`` (``[heads, 1, 1]``) and the
continuous-position-bias MLP (``continuous_position_bias_mlp.0`` / ``.2`` -> ``cpb_mlp.0`` /
``.2``) copy as they are. Hugging Face applies ``layernorm_before`` to the attention output
and ``layernorm_after`` to the MLP output (res-post-norm): libai's ``norm1`` / ``norm2``.
"""
from typing import Any, Dict, List, Mapping

from libai.models.pretrained.families.common import linear, norm
from libai.models.pretrained.families.vision import SwinMapping
from libai.models.pretrained.mapping import Rule, Target, fused_qkv, register, same

__all__ = ["SwinV2Mapping"]


@register
class SwinV2Mapping(SwinMapping):
    model_types = ("swinv2",)
    targets = {"SwinTransformerV2": Target("", "classifier")}
    hf_prefix = "swinv2."
    hf_head_keys = ("classifier.", "swinv2.pooler.")
    ignorable = (r"relative_position_index$", r"relative_coords_table$", r"attn_mask$")

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        args = super().model_args(cfg, target)
        stages = len(cfg["depths"])
        sizes = [int(w) for w in cfg.get("pretrained_window_sizes", [0] * stages)]
        args["pretrained_window_sizes"] = (sizes + [0] * stages)[:max(stages, len(sizes))]
        return args

    def rules(self, cfg: Mapping[str, Any], target: str) -> List[Rule]:
        e = "swinv2.embeddings"
        rules = [
            *linear("patch_embed.proj", f"{e}.patch_embeddings.projection"),
            *norm("patch_embed.norm", f"{e}.norm"),
            *norm("norm", "swinv2.layernorm"),
            *linear("head", "classifier"),
        ]
        depths = list(cfg["depths"])
        qkv_bias = cfg.get("qkv_bias", True)
        for s, (depth, heads) in enumerate(zip(depths, cfg["num_heads"])):
            for j in range(depth):
                ours, theirs = f"layers.{s}.blocks.{j}", f"swinv2.encoder.layers.{s}.blocks.{j}"
                att = f"{theirs}.attention.self"
                qkv = [f"{att}.{n}.weight" for n in ("query", "key", "value")]
                rules += [
                    *norm(f"{ours}.norm1", f"{theirs}.layernorm_before"),
                    *norm(f"{ours}.norm2", f"{theirs}.layernorm_after"),
                    fused_qkv(f"{ours}.attn.qkv.weight", qkv, heads),
                    same(f"{ours}.attn.logit_scale", f"{att}.logit_scale"),
                    *linear(f"{ours}.attn.cpb_mlp.0", f"{att}.continuous_position_bias_mlp.0"),
                    same(f"{ours}.attn.cpb_mlp.2.weight",
                         f"{att}.continuous_position_bias_mlp.2.weight"),
                    *linear(f"{ours}.attn.proj", f"{theirs}.attention.output.dense"),
                    *linear(f"{ours}.mlp.dense_h_to_4h", f"{theirs}.intermediate.dense"),
                    *linear(f"{ours}.mlp.dense_4h_to_h", f"{theirs}.output.dense"),
                ]
                if qkv_bias:
                    rules += [same(f"{ours}.attn.q_bias", f"{att}.query.bias"),
                              same(f"{ours}.attn.v_bias", f"{att}.value.bias")]
            if s < len(depths) - 1:
                d, t = f"layers.{s}.downsample", f"swinv2.encoder.layers.{s}.downsample"
                rules += [*norm(f"{d}.norm", f"{t}.norm"),
                          same(f"{d}.reduction.weight", f"{t}.reduction.weight")]
        return rules

    def hf_config(self, model: Any, target: str, base: Mapping[str, Any]) -> Dict[str, Any]:
        cfg = super().hf_config(model, target, base)
        first = model.layers[0].blocks[0]
        cfg.update(
            model_type="swinv2", architectures=["Swinv2ForImageClassification"],
            qkv_bias=first.attn.q_bias is not None,
            pretrained_window_sizes=list(model.pretrained_window_sizes),
        )
        return cfg
