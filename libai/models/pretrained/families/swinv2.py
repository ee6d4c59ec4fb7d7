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

from libai.models.pretrained.families.common import linear, qkv
from libai.models.pretrained.families.vision import SwinMapping
from libai.models.pretrained.mapping import Rule, Target, register, same

__all__ = ["SwinV2Mapping"]


@register
class SwinV2Mapping(SwinMapping):
    model_types = ("swinv2",)
    targets = {"SwinTransformerV2": Target("", "classifier")}
    auto_classes = {"model": "SwinTransformerV2"}
    hf_prefix = "swinv2."
    hf_head_keys = ("classifier.", "swinv2.pooler.")
    ignorable = (r"relative_position_index$", r"relative_coords_table$", r"attn_mask$")

    def model_args(self, cfg: Mapping[str, Any], target: str) -> Dict[str, Any]:
        args = super().model_args(cfg, target)
        stages = len(cfg["depths"])
        sizes = [int(w) for w in cfg.get("pretrained_window_sizes", [0] * stages)]
        args["pretrained_window_sizes"] = (sizes + [0] * stages)[:max(stages, len(sizes))]
        return args

    def attention_rules(self, cfg: Mapping[str, Any], ours: str, theirs: str,
                        heads: int) -> List[Rule]:
        """V2's attention: scaled cosine attention's ``logit_scale``, the continuous position
        bias MLP, q/k/v fused without bias, and separate q and v biases."""
        rules = [
            *qkv(f"{ours}.qkv", [f"{theirs}.{n}" for n in ("query", "key", "value")], heads,
                 bias=False),
            same(f"{ours}.logit_scale", f"{theirs}.logit_scale"),
            *linear(f"{ours}.cpb_mlp.0", f"{theirs}.continuous_position_bias_mlp.0"),
            same(f"{ours}.cpb_mlp.2.weight", f"{theirs}.continuous_position_bias_mlp.2.weight"),
        ]
        if cfg.get("qkv_bias", True):
            rules += [same(f"{ours}.q_bias", f"{theirs}.query.bias"),
                      same(f"{ours}.v_bias", f"{theirs}.value.bias")]
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
