"""Helpers the family mappings share: activations, fused projections, config reading."""
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from libai.models.pretrained.mapping import Rule, fused_heads, fused_qkv, same, split_fused_heads

__all__ = [
    "HF_TO_LIBAI_ACTIVATION",
    "activation_from_hf",
    "activation_to_hf",
    "concat_qkv",
    "dropout_p",
    "encoder_mlp",
    "linear",
    "norm",
    "num_labels",
    "qkv",
    "refuse_unimplemented",
    "require",
    "set_labels",
]

# Hugging Face ACT2FN name -> libai activation name (same function)
HF_TO_LIBAI_ACTIVATION: Dict[str, str] = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "quick_gelu": "quick_gelu",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
}
_LIBAI_TO_HF = {"gelu": "gelu", "gelu_tanh": "gelu_new", "gelu_new": "gelu_new",
                "quick_gelu": "quick_gelu", "relu": "relu", "silu": "silu", "swish": "silu",
                "tanh": "tanh", "sigmoid": "sigmoid"}


def activation_from_hf(name: str, key: str) -> str:
    if name not in HF_TO_LIBAI_ACTIVATION:
        raise ValueError(
            f"config.json sets {key}={name!r}, an activation libai does not have; supported: "
            f"{sorted(HF_TO_LIBAI_ACTIVATION)}"
        )
    return HF_TO_LIBAI_ACTIVATION[name]


def activation_to_hf(name: str) -> str:
    if name not in _LIBAI_TO_HF:
        raise ValueError(f"activation {name!r} has no Hugging Face name; cannot export")
    return _LIBAI_TO_HF[name]


def require(cfg: Mapping[str, Any], key: str, expected: Any, why: str) -> None:
    """Refuse a config value the libai model does not compute."""
    value = cfg.get(key, expected)
    if value != expected:
        raise ValueError(f"config.json sets {key}={value!r}; libai supports only {expected!r} ({why})")


# config.json fields naming mechanisms no libai decoder computes: set (non-null), they would
# change the function, so a checkpoint that sets one is refused rather than silently mis-run
_UNIMPLEMENTED = (
    "attn_logit_softcapping",
    "final_logit_softcapping",
    "query_pre_attn_scalar",
    "partial_rotary_factor",
)


def refuse_unimplemented(cfg: Mapping[str, Any], full_attention_only: bool = True) -> None:
    """Refuse a decoder ``config.json`` that sets a mechanism libai does not implement: logit
    soft-capping, rope scaling of any kind, partial rotary, and (``full_attention_only``) a
    per-layer attention pattern other than full attention everywhere."""
    for key in _UNIMPLEMENTED:
        value = cfg.get(key)
        if value is not None and not (key == "partial_rotary_factor" and value == 1.0):
            raise ValueError(f"config.json sets {key}={value!r}, a mechanism libai does not "
                             f"implement; only checkpoints without it (null) load")
    for key in ("rope_parameters", "rope_scaling"):
        rope = cfg.get(key) or {}
        kind = rope.get("rope_type", rope.get("type", "default"))
        partial = rope.get("partial_rotary_factor", 1.0)
        if kind != "default" or rope.get("factor") is not None or partial != 1.0:
            raise ValueError(f"config.json sets {key}={rope!r}: rope type {kind!r}; libai "
                             "implements only plain rotary embeddings (rope_type='default', "
                             "no scaling, every feature rotated)")
    kinds = set(cfg.get("layer_types") or ["full_attention"])
    if full_attention_only and kinds != {"full_attention"}:
        raise ValueError(f"config.json sets layer_types={cfg['layer_types']!r}; libai's model of "
                         f"model_type={cfg.get('model_type')!r} computes full attention in every "
                         "layer")


def linear(ours: str, theirs: str, bias: bool = True) -> List[Rule]:
    """``.weight`` (and ``.bias``) copied as they are."""
    rules = [same(f"{ours}.weight", f"{theirs}.weight")]
    if bias:
        rules.append(same(f"{ours}.bias", f"{theirs}.bias"))
    return rules


def norm(ours: str, theirs: str, weight: str = "weight", bias: Optional[str] = "bias") -> List[Rule]:
    rules = [same(f"{ours}.weight", f"{theirs}.{weight}")]
    if bias:
        rules.append(same(f"{ours}.bias", f"{theirs}.{bias}"))
    return rules


def qkv(ours: str, theirs: Sequence[str], num_heads: int, bias: bool = True) -> List[Rule]:
    """Separate HF q/k/v projections (``theirs``, module names) -> libai's fused ``ours``
    (``.weight``, and ``.bias`` when ``bias``)."""
    params = ("weight", "bias") if bias else ("weight",)
    return [fused_qkv(f"{ours}.{p}", [f"{n}.{p}" for n in theirs], num_heads) for p in params]


def encoder_mlp(ours: str, theirs: str) -> List[Rule]:
    """The MLP of a BERT-style HF layer (``intermediate.dense``, ``output.dense``) -> libai's
    ``mlp.dense_h_to_4h`` / ``mlp.dense_4h_to_h`` under the block ``ours``."""
    return [*linear(f"{ours}.mlp.dense_h_to_4h", f"{theirs}.intermediate.dense"),
            *linear(f"{ours}.mlp.dense_4h_to_h", f"{theirs}.output.dense")]


def num_labels(cfg: Mapping[str, Any]) -> int:
    """A classifier's class count: ``id2label``'s length, else ``num_labels`` (HF's default 2)."""
    if cfg.get("id2label"):
        return len(cfg["id2label"])
    return int(cfg.get("num_labels", 2))


def set_labels(cfg: Dict[str, Any], count: int) -> None:
    """Give an exported ``config.json`` ``count`` labels, keeping its names when they fit."""
    if len(cfg.get("id2label") or {}) != count:
        cfg["id2label"] = {str(i): f"LABEL_{i}" for i in range(count)}
        cfg["label2id"] = {f"LABEL_{i}": i for i in range(count)}
    cfg["num_labels"] = count


def concat_qkv(ours: str, theirs: str, num_heads: int, transpose: bool) -> Rule:
    """One HF tensor holding ``[q | k | v]`` on its output dim (GPT-2's ``c_attn``, stored
    ``[in, out]`` when ``transpose``) -> libai's per-head fused layout."""

    def load(w: np.ndarray) -> np.ndarray:
        rows = w.T if transpose else w
        return fused_heads(np.split(rows, 3, axis=0), num_heads)

    def save(fused: np.ndarray) -> Sequence[np.ndarray]:
        rows = np.concatenate(split_fused_heads(fused, 3, num_heads), axis=0)
        return (np.ascontiguousarray(rows.T if transpose else rows),)

    return Rule(ours, (theirs,), load, save)


def dropout_p(module: Any, default: float = 0.0) -> float:
    """The probability of an ``nn.Dropout`` (or ``default`` when there is none)."""
    return float(getattr(module, "p", default)) if module is not None else default
