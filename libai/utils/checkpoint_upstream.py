"""LiBai's checkpoint layout: what upstream LiBai's ``Checkpointer`` writes, read and written here.

Upstream LiBai saves ``save_dir/<name>/`` with one ``flow.save`` directory per registered object
and nothing else: ``model`` always, then ``optimizer`` and ``lr_scheduler`` in eager mode, or
``graph`` (the training ``nn.Graph``'s state: the module state under ``"model"``, the optimizer
moments as variables ``model.<parameter>-m`` / ``-v`` and the step counter
``System-Train-TrainStep``) and ``lr_scheduler`` in graph mode. The iteration is not stored: it
is read back from the name (``model_0000004`` is the state after iteration 4), and
``save_dir/last_checkpoint`` names the newest checkpoint. There is no manifest.

Three things differ from libai's own checkpoints and are translated here, in both directions:

* **Parameter names.** Some of libai's models name a few tensors differently (GPT's
  ``word_embeddings`` is LiBai's ``token_embeddings``, BERT's ``encoder.layers.N`` is LiBai's
  ``encoders.N``, ...). :data:`ALIASES` lists them per model family, written once and used both
  ways; on loading a key is renamed only when the model lacks it and has the renamed one, so a
  model that already uses LiBai's names loads unchanged.
* **Optimizer state in graph mode** lives in the ``graph`` part under parameter names; it is
  turned into the eager optimizer's ``state_dict`` (and back) by name.
* **LR schedulers**: LiBai's ``WarmupCosineLR`` with no warmup is OneFlow's bare decay scheduler,
  libai's is a one-phase ``SequentialLR``; the state is wrapped or unwrapped accordingly.
"""
import logging
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import oneflow as flow

__all__ = [
    "ALIASES",
    "check_optimizer_state",
    "like",
    "match_optimizer_state",
    "LIBAI_PARTS",
    "TRAIN_STEP",
    "family_of",
    "iteration_from_name",
    "optimizer_state_from_graph",
    "graph_state_from_optimizer",
    "scheduler_state_for_libai",
    "scheduler_state_from_libai",
    "to_libai_names",
    "to_model_names",
]

logger = logging.getLogger(__name__)

#: The parts upstream LiBai's trainer registers (eager: optimizer; graph mode: graph).
LIBAI_PARTS = ("model", "optimizer", "graph", "lr_scheduler")
#: The graph variable counting optimizer steps (it also drives a compiled LR schedule).
TRAIN_STEP = "System-Train-TrainStep"
#: Eager optimizer state slot -> suffix of the graph variable holding it.
_SLOTS = {"exp_avg": "m", "exp_avg_sq": "v", "momentum_buf": "momentum", "square_avg": "mean_square"}
_GRAPH_MODEL = "model"  # LiBai's GraphBase holds the model as ``self.model``


def iteration_from_name(name: str) -> Optional[int]:
    """LiBai's rule: the number after the last ``_`` of a checkpoint's name (``model_0000004`` ->
    4); ``None`` for names without one (``model_final``, ``model_best``)."""
    match = re.search(r"_(\d+)$", name)
    return int(match.group(1)) if match else None


# ---------------------------------------------------------------------------------------------
# Parameter names
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Alias:
    """One tensor-name difference: libai's spelling ``ours`` is LiBai's ``libai``.

    ``{P}`` stands for the model's optional head prefix (one of ``prefixes``), ``{N}`` for a
    layer number. A template ending in ``.`` renames a whole sub-tree, others one exact key.
    """

    ours: str
    libai: str
    prefixes: Tuple[str, ...] = ("",)

    def _regex(self, template: str) -> "re.Pattern[str]":
        pattern = ""
        for piece in re.split(r"(\{P\}|\{N\})", template):
            if piece == "{P}":
                pattern += "(?P<P>" + "|".join(re.escape(p) for p in sorted(self.prefixes)) + "|)"
            elif piece == "{N}":
                pattern += r"(?P<N>\d+)"
            else:
                pattern += re.escape(piece)
        return re.compile("^" + pattern + ("" if template.endswith(".") else "$"))

    def rename(self, key: str, to_libai: bool) -> Optional[str]:
        source, target = (self.ours, self.libai) if to_libai else (self.libai, self.ours)
        match = self._regex(source).match(key)
        if not match:
            return None
        parts = match.groupdict()
        head = target.replace("{P}", parts.get("P") or "").replace("{N}", parts.get("N") or "")
        return head + key[match.end():]


_BERT = ("bert.", "roberta.")
#: Model family -> the names libai spells differently from LiBai.
ALIASES: Dict[str, List[Alias]] = {
    "gpt": [
        Alias("{P}embeddings.word_embeddings.", "{P}embeddings.token_embeddings.", ("GPT_model.",)),
        Alias("{P}transformer.final_layernorm.", "{P}transformer.layernorm_f.", ("GPT_model.",)),
    ],
    "bert": [
        Alias("{P}embeddings.word_embeddings.", "{P}embeddings.vocab_embeddings.", _BERT),
        Alias("{P}encoder.layers.{N}.", "{P}encoders.{N}.", _BERT),
        Alias("{P}encoder.final_layernorm.", "{P}final_layernorm.", _BERT),
        Alias("{P}pooler.weight", "{P}pooler.dense.weight", _BERT),
        Alias("{P}pooler.bias", "{P}pooler.dense.bias", _BERT),
        Alias("cls_head.dense.", "cls_head.predictions.dense."),
        Alias("cls_head.layernorm.", "cls_head.predictions.layernorm."),
    ],
    "t5": [
        Alias("{P}embeddings.", "{P}embedding.", ("t5_model.",)),
    ],
    "vision": [
        Alias("patch_embed.weight", "patch_embed.proj.weight"),
        Alias("patch_embed.bias", "patch_embed.proj.bias"),
    ],
}
#: libai (= LiBai) model class name -> family.
CLASS_FAMILY = {
    "GPTModel": "gpt", "GPTForPreTraining": "gpt",
    "BertModel": "bert", "BertForPreTraining": "bert", "BertForClassification": "bert",
    "RobertaModel": "bert", "RobertaForPreTraining": "bert", "RobertaForCausalLM": "bert",
    "T5Model": "t5", "T5ForPreTraining": "t5",
    "VisionTransformer": "vision", "SwinTransformer": "vision", "SwinTransformerV2": "vision",
    "ResMLP": "vision",
}
# Head prefixes LiBai's loaders add or strip when a base model's weights meet a head model.
_HEAD_PREFIXES = ("GPT_model.", "bert.", "roberta.", "t5_model.")


def family_of(keys: Iterable[str], class_name: Optional[str] = None) -> Optional[str]:
    """The model family of a libai state dict: from the class name when known, else guessed
    from tell-tale keys; ``None`` when nothing matches (no renaming then)."""
    if class_name:
        short = class_name.rsplit(".", 1)[-1]
        if short in CLASS_FAMILY:
            return CLASS_FAMILY[short]
    keys = list(keys)
    if any(k.startswith("GPT_model.") or ".final_layernorm." in k and k.startswith("transformer.")
           for k in keys):
        return "gpt"
    if any("cross_attention." in k or k.startswith("t5_model.") for k in keys):
        return "t5"
    if any(k.startswith(_BERT) or "tokentype_embeddings" in k or k.startswith("pooler.")
           for k in keys):
        return "bert"
    if any(k.startswith("patch_embed.") for k in keys):
        return "vision"
    return None


def to_model_names(state: Mapping[str, Any], own_keys: Iterable[str]) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """``state`` (LiBai's names) with each key the model lacks renamed to one it has.

    Tried in turn: the key itself, every alias, and adding or stripping a head prefix
    (``GPT_model.``...) as LiBai's loaders do. Returns the new dict and ``{old: new}`` for the
    renamed keys. A key with no counterpart keeps its name (it is reported as unexpected).
    """
    own = set(own_keys)
    aliases = [a for family in ALIASES.values() for a in family]
    result: Dict[str, Any] = {}
    renamed: Dict[str, str] = {}
    for key, value in state.items():
        target = key if key in own else _find_model_name(key, own, aliases)
        if target is None or target in result:
            target = key
        if target != key:
            renamed[key] = target
        result[target] = value
    return result, renamed


def _find_model_name(key: str, own: set, aliases: Sequence[Alias]) -> Optional[str]:
    variants = [key] + [key[len(p):] for p in _HEAD_PREFIXES if key.startswith(p)]
    variants += [p + key for p in _HEAD_PREFIXES]
    for variant in variants:
        if variant in own:
            return variant
        for alias in aliases:
            renamed = alias.rename(variant, to_libai=False)
            if renamed in own:
                return renamed
    return None


def to_libai_names(state: Mapping[str, Any], family: Optional[str]) -> Dict[str, Any]:
    """``state`` (libai's names) with LiBai's names, for a model of ``family``."""
    result: Dict[str, Any] = {}
    for key, value in state.items():
        new = key
        for alias in ALIASES.get(family or "", []):
            renamed = alias.rename(key, to_libai=True)
            if renamed is not None:
                new = renamed
                break
        result[new] = value
    return result


def fit_shapes(state: Dict[str, Any], own: Mapping[str, Any]) -> List[str]:
    """Reshape, in place, tensors whose shape differs from the model's only by size-1 axes
    (LiBai's ``logit_scale`` of shape ``(1, h, 1, 1)`` against ``(h, 1, 1)``); return their keys."""
    fitted = []
    for key, value in state.items():
        if key not in own or not hasattr(value, "shape"):
            continue
        mine, theirs = tuple(own[key].shape), tuple(value.shape)
        if mine != theirs and [d for d in mine if d != 1] == [d for d in theirs if d != 1]:
            state[key] = value.reshape(mine)
            fitted.append(key)
    return fitted


def like(value: Any, reference: Any) -> Any:
    """``value`` as a tensor of ``reference``'s kind: a local tensor (what ``flow.load`` gives
    in one process) becomes global with ``reference``'s placement and SBP when ``reference`` is
    global, as LiBai's ``Checkpointer`` does before ``load_state_dict``."""
    if not isinstance(value, flow.Tensor) or not isinstance(reference, flow.Tensor):
        return value
    if reference.is_global and not value.is_global:
        whole = [flow.sbp.broadcast] * len(reference.sbp)
        value = value.to_global(placement=reference.placement, sbp=whole)
        return value.to_global(sbp=reference.sbp) if tuple(reference.sbp) != tuple(whole) else value
    return value


# ---------------------------------------------------------------------------------------------
# Tensor layouts: Swin's fused q/k/v rows
# ---------------------------------------------------------------------------------------------
# LiBai's Swin and SwinV2 order the rows of ``attn.qkv`` as [q|k|v][head][dim] (timm's layout);
# libai's, like its other attention layers, as [head][q|k|v][dim], so that tensor parallelism
# splits whole heads. LiBai's Swin checkpoints are recognised by the position-index buffers they
# store (``attn.relative_position_index``), which libai's do not.
_QKV = re.compile(r"^(?P<attn>.*\.attn)\.qkv\.(weight|bias)$")
LIBAI_SWIN_MARKER = "attn.relative_position_index"


def _swin_heads(attn: str, shapes: Mapping[str, Any]) -> Optional[int]:
    """Heads of the Swin attention ``attn`` from its own tensors (``None``: not a Swin one)."""
    table = shapes.get(f"{attn}.relative_position_bias_table")
    if table is not None:
        return int(table.shape[1])
    mlp = shapes.get(f"{attn}.cpb_mlp.2.weight")  # SwinV2: 512 -> heads
    return int(mlp.shape[0]) if mlp is not None else None


def _regroup_rows(value: Any, heads: int, to_libai: bool) -> Any:
    rows = int(value.shape[0])
    if rows % (3 * heads):
        raise ValueError(f"a fused q/k/v tensor of {rows} rows cannot hold 3 x {heads} heads")
    rest = tuple(value.shape[1:])
    per_head = rows // (3 * heads)
    grouped = (heads, 3, per_head) if to_libai else (3, heads, per_head)
    return value.reshape(grouped + rest).transpose(0, 1).reshape((rows,) + rest)


def swin_qkv_from_libai(state: Dict[str, Any], own: Mapping[str, Any]) -> List[str]:
    """Reorder, in place, the q/k/v rows of a LiBai Swin/SwinV2 state for libai's Swin
    (``own``: the model's state); a state without LiBai's marker buffers is left alone."""
    if not any(k.endswith(LIBAI_SWIN_MARKER) for k in state):
        return []
    changed = []
    for key in list(state):
        match = _QKV.match(key)
        heads = _swin_heads(match.group("attn"), own) if match and key in own else None
        if heads and heads > 1:
            state[key] = _regroup_rows(state[key], heads, to_libai=False)
            changed.append(key)
    return changed


def swin_for_libai(state: Dict[str, Any]) -> List[str]:
    """libai's Swin/SwinV2 state made LiBai's, in place: q/k/v rows regrouped, and Swin's
    ``relative_position_index`` buffers (which LiBai stores) added. Returns the changed keys."""
    changed = []
    for key in list(state):
        match = _QKV.match(key)
        heads = _swin_heads(match.group("attn"), state) if match else None
        if not heads:
            continue
        if heads > 1:
            state[key] = _regroup_rows(state[key], heads, to_libai=True)
            changed.append(key)
        table = state.get(f"{match.group('attn')}.relative_position_bias_table")
        index_key = f"{match.group('attn')}.relative_position_index"
        if table is not None and index_key not in state:
            window = (int(round(float(table.shape[0]) ** 0.5)) + 1) // 2
            state[index_key] = flow.tensor(relative_position_index(window), dtype=flow.int64)
            changed.append(index_key)
    return changed


def relative_position_index(window: int) -> Any:
    """Swin's table index of every (query, key) pair of a ``window`` x ``window`` window."""
    import numpy as np

    ys, xs = np.meshgrid(np.arange(window), np.arange(window), indexing="ij")
    coords = np.stack([ys.ravel(), xs.ravel()])  # [2, N]
    offsets = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0) + (window - 1)
    return offsets[:, :, 0] * (2 * window - 1) + offsets[:, :, 1]


# ---------------------------------------------------------------------------------------------
# Optimizer state: LiBai's graph part <-> the eager optimizer's state_dict
# ---------------------------------------------------------------------------------------------
def _optimizer_params(optimizer: Any) -> List[Any]:
    """The parameters of a OneFlow optimizer (or of a wrapper holding one as ``.optimizer``),
    in the order its ``state_dict`` numbers them."""
    inner = optimizer if hasattr(optimizer, "param_groups") else getattr(optimizer, "optimizer", None)
    if inner is None or not hasattr(inner, "param_groups"):
        raise TypeError(f"{type(optimizer).__name__} is not a OneFlow optimizer")
    return [p for group in inner.param_groups for p in group.parameters]


def _inner_state_dict(optimizer: Any) -> Dict[str, Any]:
    inner = optimizer if hasattr(optimizer, "param_groups") else optimizer.optimizer
    return inner.state_dict()


def optimizer_state_from_graph(
    graph_state: Mapping[str, Any], optimizer: Any, model: flow.nn.Module,
    renamed: Mapping[str, str],
) -> Dict[str, Any]:
    """The eager ``state_dict`` of ``optimizer`` holding the moments and step that LiBai's
    ``graph`` part stores by parameter name (``renamed``: LiBai name -> model name, as returned
    by :func:`to_model_names`)."""
    names = {id(p): n for n, p in model.named_parameters()}
    ours_to_theirs = {ours: theirs for theirs, ours in renamed.items()}
    state: Dict[Any, Any] = {}
    missing = []
    for index, param in enumerate(_optimizer_params(optimizer)):
        name = names.get(id(param))
        theirs = ours_to_theirs.get(name, name)
        entry = {}
        for slot, suffix in _SLOTS.items():
            key = f"{_GRAPH_MODEL}.{theirs}-{suffix}"
            if key in graph_state:
                entry[slot] = like(graph_state[key], param)
        if entry:
            state[index] = entry
        else:
            missing.append(name)
    if missing:
        logger.warning("LiBai's graph state has no optimizer moments for %d parameter(s) (%s); "
                       "they start from zero", len(missing), ", ".join(map(str, missing[:5])))
    if TRAIN_STEP in graph_state:
        step = graph_state[TRAIN_STEP]
        step = step.to_local() if step.is_global else step  # a broadcast value: any rank's copy
        state["step"] = int(step.numpy().reshape(-1)[0])
    result = _inner_state_dict(optimizer)
    result["state"] = state
    return result


def graph_state_from_optimizer(
    optimizer_state: Mapping[str, Any], param_names: Sequence[str], model_state: Mapping[str, Any]
) -> Dict[str, Any]:
    """LiBai's ``graph`` part from an eager optimizer ``state_dict`` whose parameter ``i`` is
    named ``param_names[i]`` (LiBai's names), and the model's state (LiBai's names)."""
    graph: Dict[str, Any] = {_GRAPH_MODEL: dict(model_state)}
    state = optimizer_state.get("state", {})
    for index, name in enumerate(param_names):
        for slot, value in state.get(index, {}).items():
            if slot in _SLOTS:
                graph[f"{_GRAPH_MODEL}.{name}-{_SLOTS[slot]}"] = value
    if "step" in state:
        graph[TRAIN_STEP] = flow.tensor([int(state["step"])], dtype=flow.int64)
    return graph


def match_optimizer_state(optimizer_state: Dict[str, Any], optimizer: Any) -> None:
    """Make, in place, each numbered tensor of an eager optimizer state of the kind (local or
    global) of the parameter it belongs to: ``flow.load`` in one process gives local tensors,
    and OneFlow's ``load_state_dict`` cannot place them on global parameters."""
    try:
        params = _optimizer_params(optimizer)
    except TypeError:
        return
    for index, entry in optimizer_state.get("state", {}).items():
        if isinstance(index, int) and isinstance(entry, dict) and index < len(params):
            for slot, value in entry.items():
                entry[slot] = like(value, params[index])


def check_optimizer_state(optimizer_state: Dict[str, Any], optimizer: Any, path: str) -> None:
    """Refuse an eager optimizer state that does not fit ``optimizer`` (LiBai's eager state is
    numbered, not named: the groups and each numbered tensor's shape must match); make each
    tensor of the kind (local/global) of its parameter, in place."""
    params = _optimizer_params(optimizer)
    groups = optimizer_state.get("param_groups", [])
    own_groups = _inner_state_dict(optimizer)["param_groups"]
    sizes = [len(g.get("params", [])) for g in groups]
    own_sizes = [len(g["params"]) for g in own_groups]
    if sizes != own_sizes:
        raise ValueError(
            f"the optimizer state in {path} has parameter groups of sizes {sizes}, this "
            f"optimizer {own_sizes}: build the optimizer as the LiBai run did (same "
            "optim.params settings), or load the weights only (train.load_weight)"
        )
    for index, entry in optimizer_state.get("state", {}).items():
        if not isinstance(index, int) or not isinstance(entry, dict):
            continue
        for slot, value in entry.items():
            if hasattr(value, "shape") and tuple(value.shape) != tuple(params[index].shape):
                raise ValueError(
                    f"the optimizer state in {path} does not fit this model: {slot} of "
                    f"parameter #{index} has shape {tuple(value.shape)}, the parameter "
                    f"{tuple(params[index].shape)}. LiBai numbers parameters in its model's "
                    "order; load the weights only (train.load_weight) to start a fresh optimizer"
                )
            entry[slot] = like(value, params[index])


# ---------------------------------------------------------------------------------------------
# LR scheduler state
# ---------------------------------------------------------------------------------------------
def scheduler_state_from_libai(theirs: Mapping[str, Any], own: Mapping[str, Any]) -> Dict[str, Any]:
    """LiBai's scheduler state made loadable by a scheduler whose current state is ``own``.

    LiBai's warmup-free schedule is OneFlow's bare decay scheduler; libai's is a ``SequentialLR``
    of one phase: the bare state becomes that phase. Keys ``own`` does not have (LiBai's
    ``warmup_iters``, ...) are dropped.
    """
    theirs = dict(theirs)
    if "schedulers" in own and "schedulers" not in theirs and len(own["schedulers"]) == 1:
        wrapped = {k: v for k, v in own.items() if k != "schedulers"}
        for key in ("last_step", "_last_lr", "base_lrs"):
            if key in theirs:
                wrapped[key] = theirs[key]
        wrapped["schedulers"] = [theirs]
        return wrapped
    if "schedulers" not in own and len(theirs.get("schedulers", ())) == 1:
        inner = dict(theirs["schedulers"][0])
        for key in ("last_step", "_last_lr"):
            if key in theirs:
                inner[key] = theirs[key]
        theirs = inner
    return {k: v for k, v in theirs.items() if k in own}


def scheduler_state_for_libai(ours: Mapping[str, Any]) -> Dict[str, Any]:
    """libai's scheduler state in the shape LiBai's scheduler of the same settings has: a
    one-phase ``SequentialLR`` (no warmup) is LiBai's bare decay scheduler."""
    ours = dict(ours)
    if len(ours.get("schedulers", ())) == 1:
        inner = dict(ours["schedulers"][0])
        for key in ("last_step", "_last_lr"):
            if key in ours:
                inner[key] = ours[key]
        return inner
    return ours
