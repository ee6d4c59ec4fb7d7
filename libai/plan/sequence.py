"""Tokens per sample the plan assumes: the data's, the config's dataset's, the model's, or a
documented default (``docs/preflight.md``, "Limits")."""
from typing import Any, List, Optional, Tuple

from libai.plan import data_checks
from libai.plan.problems import Problem
from libai.plan.shapes import ModelShape

__all__ = ["DEFAULT_SEQ_LENGTH", "tokens_per_sample"]

DEFAULT_SEQ_LENGTH = 4096  # tokens per sample planned when neither the data nor the config says


def tokens_per_sample(cfg: Any, facts: data_checks.DataFacts, shape: Optional[ModelShape],
                      seq_length: Optional[int] = None) -> Tuple[int, List[Problem]]:
    """Tokens each sample feeds the attention, and a note when they were assumed.

    In this order: ``seq_length`` (``--seq-length``); the first sample's, when the data was
    read; the training dataset's ``max_seq_length`` in the config, at most the model's positions
    (the samples a run would see); the model's own length (``max_seq_length``, patches of a
    vision model); else the model's positions, at most :data:`DEFAULT_SEQ_LENGTH`, said so: a
    bare model config (a Qwen2-7B or Gemma preset) carries 32k-128k positions, which no recipe
    trains every sample at, and planning them would make the activations absurd.
    """
    if seq_length:
        return int(seq_length), []
    if facts.seq_length:
        return int(facts.seq_length), []
    positions = _model_positions(cfg.model)
    own = _tokens_of_model_node(cfg.model, shape)
    dataset = _dataset_seq_length(cfg)
    if dataset:
        return min(dataset, _model_max_length(cfg.model) or dataset), []
    if own or not positions:
        return own or 1, []
    seq = min(positions, DEFAULT_SEQ_LENGTH)
    return seq, [Problem("train", (
        f"sequence length {seq:,} assumed: no dataset in the config says one (the model has "
        f"{positions:,} positions); plan another with --seq-length N (libai.plan(cfg, seq_length=N))"),
        "warning")]


def _dataset_seq_length(cfg: Any) -> Optional[int]:
    """The largest ``max_seq_length`` of the training datasets' nodes (none read), if any."""
    loader = cfg.get("dataloader", None) if hasattr(cfg, "get") else None
    train = loader.get("train", None) if hasattr(loader, "get") else None
    datasets = train.get("dataset", None) if hasattr(train, "get") else None
    if datasets is None:
        return None
    nodes = [datasets] if hasattr(datasets, "keys") else list(datasets)
    lengths = [d.get("max_seq_length") for d in nodes if hasattr(d, "keys")]
    lengths = [int(x) for x in lengths if isinstance(x, int) and x > 0]
    return max(lengths) if lengths else None


def _model_max_length(model: Any) -> Optional[int]:
    """The most tokens the model takes: its ``max_seq_length`` (GPT's), else its positions."""
    node = model.get("cfg", None) or model
    if hasattr(node, "get") and node.get("max_seq_length"):
        return int(node.get("max_seq_length"))
    inner = model.get("model", None)
    if inner is not None and hasattr(inner, "get") and _model_max_length(inner):
        return _model_max_length(inner)
    return _model_positions(model)


def _model_positions(model: Any) -> Optional[int]:
    """The model's position count (``max_position_embeddings``/``n_positions``), if it says."""
    node = model.get("cfg", None) or model
    for key in ("max_position_embeddings", "n_positions"):
        if hasattr(node, "get") and node.get(key):
            return int(node.get(key))
    inner = model.get("model", None)
    return _model_positions(inner) if inner is not None and hasattr(inner, "get") else None


def _tokens_of_model_node(model: Any, shape: Optional[ModelShape]) -> int:
    """The model's own training length: ``max_seq_length`` (GPT's), or its patches; else 0."""
    node = model.get("cfg", None) or model
    if hasattr(node, "get") and node.get("max_seq_length"):
        return int(node.get("max_seq_length"))
    inner = model.get("model", None)  # wrappers such as lora_model(model=...)
    if inner is not None and hasattr(inner, "get"):
        return _tokens_of_model_node(inner, shape)
    img, patch = model.get("img_size", None), model.get("patch_size", None)
    if img and patch:
        img = img[0] if isinstance(img, (list, tuple)) else img
        cls = shape is not None and any("cls_token" in p.name for p in shape.params)
        return int(img // patch) ** 2 + (1 if cls else 0)
    return 0
