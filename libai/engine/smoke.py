"""``--smoke``: any shipped recipe shrunk to a run of seconds, to check that it works here.

A first try of a recipe should not need the 15 overrides that make its model, sequences, images
and batches small. :func:`apply_smoke` changes a loaded config in place, by key name, wherever
the recipe has the key:

* the model: 2 layers (``hidden_layers``, ``decoder_layers``, ``depth``, ``depths``), widths
  of 32 (``hidden_size``, ``embed_dim``; 64 for ``intermediate_size``), 2 attention heads,
  32×32 images in patches of 4 (64×64 for AlexNet), windows of 4, at most 64 positions; a ResNet becomes a narrow
  ResNet-18 for small images; ``train.dist.pipeline_num_layers`` follows the layer count;
* the data: sequences of at most 32 tokens (16 for a decoder), images resized to 32 pixels, no
  loader worker processes; the data files are the recipe's own (point them at your data as
  usual), and those not there yet get tiny synthetic stand-ins of the same format
  (:func:`libai.engine.smoke_data.make_stand_ins`, which the command line runs after the
  overrides);
* the run: ``iterations`` training iterations (default 4) of micro-batches of at most 2, logged
  every iteration, evaluated on 1 batch and checkpointed at the middle and the end;
  ``train_epoch`` and ``train_samples`` are cleared so that the iteration count wins;
* the layout: one the launch cannot hold (GPT-3's 8 × 8 tensor × pipeline layout in one process)
  becomes data parallel over the processes there are.

What it cannot keep is dropped with a log line: pretrained weights (``train.load_weight``,
``base_weights``) no longer fit the shrunken model. Vocabulary size and class count stay: they
belong to the data (the tokenizer sets ``vocab_size``). ``--fast-dev-run`` is the other quick
check: the full-size model for 10 iterations.
"""
import logging
from typing import Any, Iterator, List, Tuple

from libai.utils import distributed as dist

logger = logging.getLogger(__name__)

__all__ = ["apply_smoke", "config_nodes", "SMOKE_ITERATIONS"]

SMOKE_ITERATIONS = 4

# model keys -> the smoke value (ints are upper bounds: a smaller recipe value is kept)
_MODEL_LIMITS = {
    "hidden_layers": 2, "decoder_layers": 2, "num_layers": 2,
    "hidden_size": 32, "embed_dim": 32, "intermediate_size": 64, "ffn_hidden_size": 64,
    "num_attention_heads": 2, "num_key_value_heads": 2, "head_size": 16,
    "img_size": 32, "patch_size": 4, "window_size": 4,
    "max_position_embeddings": 64, "max_seq_length": 64,
}
_RESNET_DEPTHS = (18, 34, 50, 101, 152)
_WEIGHT_KEYS = ("base_weights", "pretrained_model_path")


def config_nodes(node: Any, path: str = "") -> Iterator[Tuple[str, Any]]:
    """Every dict-like node under ``node`` (``node`` included, lists walked into) with its
    dotted path, parents before children; each is the live node, to read or change in place."""
    if hasattr(node, "keys"):
        yield path, node
        for key in list(node.keys()):
            yield from config_nodes(node[key], f"{path}.{key}" if path else str(key))
    elif isinstance(node, (list, tuple)) or type(node).__name__ == "ListConfig":
        for i, item in enumerate(node):
            yield from config_nodes(item, f"{path}.{i}")


def _shrink(node: Any, key: str, value: Any, changes: List[str], path: str) -> None:
    if key not in node:
        return
    current = node[key]
    if isinstance(value, int) and isinstance(current, int) and not isinstance(current, bool):
        if current <= value:
            return
    elif current == value:
        return
    node[key] = value
    changes.append(f"{path}.{key}={value}" if path else f"{key}={value}")


def _shrink_model(model: Any, changes: List[str]) -> int:
    """Shrink the model node in place; returns its layer count for pipeline stages (0: unknown)."""
    layers = 0
    for path, node in config_nodes(model, "model"):
        if "small_input" in node and "width" in node:  # a ResNet: depth means 18/34/50...
            _shrink(node, "depth", 18, changes, path)
            _shrink(node, "width", 8, changes, path)
            _shrink(node, "small_input", True, changes, path)
            continue
        for key, limit in _MODEL_LIMITS.items():
            _shrink(node, key, limit, changes, path)
        if "depth" in node and isinstance(node["depth"], int) and node["depth"] not in _RESNET_DEPTHS:
            _shrink(node, "depth", 2, changes, path)
            layers = max(layers, int(node["depth"]))
        if "depths" in node and len(node["depths"]) > 2:
            _shrink(node, "depths", [2, 2], changes, path)
            if "num_heads" in node and not isinstance(node["num_heads"], int):
                _shrink(node, "num_heads", [2, 4], changes, path)
        elif "depths" in node:
            _shrink(node, "depths", [min(2, int(d)) for d in node["depths"]], changes, path)
        if "depths" in node:
            layers = max(layers, sum(int(d) for d in node["depths"]))
            if "pretrained_window_sizes" in node and len(node["pretrained_window_sizes"]) != len(node["depths"]):
                _shrink(node, "pretrained_window_sizes", [0] * len(node["depths"]), changes, path)
        if "num_heads" in node and isinstance(node["num_heads"], int):
            _shrink(node, "num_heads", 2, changes, path)
        if "channels" in node and "pool_size" in node:  # AlexNet
            _shrink(node, "channels", [8, 16, 16, 16, 16], changes, path)
            _shrink(node, "pool_size", 2, changes, path)
        if "hidden_layers" in node:
            layers = max(layers, int(node["hidden_layers"]) + int(node.get("decoder_layers", 0) or 0))
        for key in _WEIGHT_KEYS:
            if node.get(key, None):
                node[key] = ""
                changes.append(f"{path}.{key}='' (full-size weights do not fit the smoke model)")
    return layers


def _smallest_image(model: Any) -> int:
    """Image side for the smoke data: 32, or 64 for AlexNet (its strided convolutions need 63)."""
    return 64 if any("channels" in node and "pool_size" in node for _, node in config_nodes(model)) else 32


def _shrink_data(dataloader: Any, changes: List[str], image_size: int = 32) -> None:
    for path, node in config_nodes(dataloader, "dataloader"):
        if "num_workers" in node:
            _shrink(node, "num_workers", 0, changes, path)
        _shrink(node, "max_seq_length", 32, changes, path)
        _shrink(node, "max_seq_length_dec", 16, changes, path)
        if "size" in node and "train" in node and isinstance(node["size"], int):  # image transforms
            _shrink(node, "size", image_size, changes, path)


def _fit_layout(dist_cfg: Any, layers: int, changes: List[str]) -> None:
    """A layout for more processes than this launch (GPT-3's 8 × 8 tensor × pipeline on one
    machine), or more pipeline stages than the smoke model has layers, becomes plain data
    parallel over the processes there are: the smoke run checks the recipe, not its layout."""
    world = dist.get_world_size()
    tp = int(dist_cfg.get("tensor_parallel_size", 1) or 1)
    pp = int(dist_cfg.get("pipeline_parallel_size", 1) or 1)
    dp = dist_cfg.get("data_parallel_size", None)
    fits = world % (tp * pp) == 0 and (dp is None or int(dp) * tp * pp == world)
    if fits and not (layers and pp > layers):
        return
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        if key in dist_cfg and dist_cfg[key] not in (None, 1):
            dist_cfg[key] = 1
            changes.append(f"train.dist.{key}=1 (the recipe's {tp}×{pp} tensor×pipeline layout "
                           f"does not fit {world} process(es) and a {layers or '?'}-layer model)")
    if dp is not None:
        dist_cfg.data_parallel_size = None
        changes.append("train.dist.data_parallel_size=None (all processes data parallel)")


def apply_smoke(cfg: Any, iterations: int = SMOKE_ITERATIONS) -> List[str]:
    """Shrink ``cfg`` in place to a seconds-long run (see the module docstring); returns the
    settings changed, as ``key=value`` strings (also logged)."""
    iterations = max(1, int(iterations))
    changes: List[str] = []
    layers = _shrink_model(cfg.model, changes) if "model" in cfg else 0
    if "dataloader" in cfg:
        _shrink_data(cfg.dataloader, changes, _smallest_image(cfg.model) if "model" in cfg else 32)
    t = cfg.train
    middle = max(1, iterations // 2)
    run = {
        "train_iter": iterations, "train_epoch": 0, "log_period": 1,
        "train_micro_batch_size": min(int(t.train_micro_batch_size or 2), 2),
        "test_micro_batch_size": min(int(t.get("test_micro_batch_size", 2) or 2), 2),
    }
    for key, value in run.items():
        if key in t and t[key] != value:
            t[key] = value
            changes.append(f"train.{key}={value}")
    for key in ("train_samples", "global_batch_size", "num_accumulation_steps"):
        if t.get(key, None) is not None:
            t[key] = None
            changes.append(f"train.{key}=None")
    if t.get("load_weight", None):
        t.load_weight = ""
        changes.append("train.load_weight='' (full-size weights do not fit the smoke model)")
    t.checkpointer.period = middle
    t.evaluation.eval_period = middle
    t.evaluation.eval_iter = 1
    changes += [f"train.checkpointer.period={middle}", f"train.evaluation.eval_period={middle}",
                "train.evaluation.eval_iter=1"]
    if layers and "dist" in t and t.dist.get("pipeline_num_layers", None) is not None:
        t.dist.pipeline_num_layers = layers
        changes.append(f"train.dist.pipeline_num_layers={layers}")
    if "dist" in t:
        _fit_layout(t.dist, layers, changes)
    logger.info(f"--smoke: a shrunken run of {iterations} iterations: " + ", ".join(changes))
    return changes
