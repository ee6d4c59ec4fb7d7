"""Parameter groups for an optimizer: per-parameter weight decay, overrides and clipping.

Why groups: weight decay pulls weights towards zero, which helps matrices generalise but only
hurts biases and the scale/shift of normalisation layers (it fights the very statistics they are
there to set). So those get their own weight decay, 0 by default. Parameters that end up with
identical options share one group, which keeps the optimizer (and an ``nn.Graph`` built from it)
small.

A note on clipping, checked with OneFlow 0.9.0: the group keys ``clip_grad_max_norm`` /
``clip_grad_norm_type`` clip each param group by *that group's* gradient norm, both in eager
(``optimizer.clip_grad()``) and in graph mode. When every parameter has the same options there
is one group, and the clip is by the global norm of all gradients.
"""
import logging
import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

import oneflow as flow

__all__ = [
    "get_default_optimizer_params",
    "expand_param_groups",
    "reduce_param_groups",
    "is_norm_module",
]

logger = logging.getLogger(__name__)

_NORM_TYPES: Tuple[type, ...] = tuple(
    cls
    for cls in (
        getattr(flow.nn, name, None)
        for name in (
            "LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm",
            "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "SyncBatchNorm", "RMSNorm",
        )
    )
    if isinstance(cls, type)
)
# Any class named like a normalisation layer ("LayerNorm", "RMSNorm", "BatchNorm2d", ...), so
# libai's own layers and user layers are recognised without importing them here.
_NORM_NAME = re.compile(r"Norm(\d+d)?$")


def is_norm_module(module: flow.nn.Module) -> bool:
    """Whether ``module`` is a normalisation layer (by type, or by a class name ending in Norm)."""
    return isinstance(module, _NORM_TYPES) or bool(_NORM_NAME.search(type(module).__name__))


def get_default_optimizer_params(
    model: flow.nn.Module,
    base_lr: Optional[float] = None,
    weight_decay: Optional[float] = None,
    weight_decay_norm: Optional[float] = None,
    weight_decay_bias: Optional[float] = None,
    clip_grad_max_norm: Optional[float] = None,
    clip_grad_norm_type: Optional[float] = None,
    overrides: Optional[Mapping[str, Mapping[str, Any]]] = None,
) -> List[Dict[str, Any]]:
    """Split ``model``'s trainable parameters into optimizer param groups.

    Options of a parameter, applied in this order (later wins), as in LiBai:

    1. ``lr=base_lr`` and ``weight_decay=weight_decay`` (left out when ``None``, so the
       optimizer's own values apply);
    2. every parameter of a normalisation module: ``weight_decay=weight_decay_norm``;
    3. every parameter named ``bias`` (norm biases included): ``weight_decay=weight_decay_bias``;
    4. ``overrides[name]``, where ``name`` is the parameter's last name part (``"pos_embed"``)
       or its full name (``"encoder.pos_embed"``); a full-name entry wins over a short one.

    Steps 2 and 3 are skipped when their value is ``None`` (the default; libai's
    ``configs/common/optim.py`` sets both to 0). ``overrides["bias"]`` together with
    ``weight_decay_bias`` is refused as ambiguous.

    ``clip_grad_max_norm`` (with ``clip_grad_norm_type``, 2.0 when ``None``) is put into every
    group, which is how OneFlow optimizers enable clipping in eager and graph mode alike.

    Every trainable parameter appears exactly once (shared parameters are counted at their first
    owner); frozen ones (``requires_grad=False``) are left out. Parameters with equal options
    share a group (:func:`reduce_param_groups`).

    Returns:
        A list of ``{"params": [...], **options}`` dicts for ``flow.optim.*(params, ...)``.
    """
    if not isinstance(model, flow.nn.Module):
        raise TypeError(
            f"get_default_optimizer_params needs the model (an oneflow.nn.Module), got "
            f"{type(model).__name__}; build_optimizer fills it in for you"
        )
    overrides = _check_overrides(overrides)
    if weight_decay_bias is not None and "bias" in overrides:
        raise ValueError(
            f"weight_decay_bias={weight_decay_bias} and overrides['bias']={overrides['bias']} both "
            "set the options of bias parameters; keep one of them"
        )
    defaults = _base_options(base_lr, weight_decay, clip_grad_max_norm, clip_grad_norm_type)
    per_param: List[Dict[str, Any]] = []
    used_overrides: Set[str] = set()
    for name, param, module in _named_trainable(model):
        options = dict(defaults)
        short = name.rsplit(".", 1)[-1]
        if is_norm_module(module) and weight_decay_norm is not None:
            options["weight_decay"] = weight_decay_norm
        if short == "bias" and weight_decay_bias is not None:
            options["weight_decay"] = weight_decay_bias
        for key in (short, name):  # the full name is applied last, so it wins
            if key in overrides:
                options.update(overrides[key])
                used_overrides.add(key)
        per_param.append({"params": [param], **options})
    if not per_param:
        raise ValueError(
            f"{type(model).__name__} has no trainable parameters (all are frozen or there are "
            "none); an optimizer needs at least one"
        )
    _check_all_used(overrides, used_overrides, model)
    return reduce_param_groups(per_param)


def expand_param_groups(groups: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """One group per parameter, ``{"params": [p], **options}``, in order of first appearance.

    A parameter listed in several groups gets the union of their options, a later group's
    value winning over an earlier one's. (LiBai's ``libai.optim.build._expand_param_groups``.)
    """
    merged: Dict[int, Dict[str, Any]] = {}
    for index, group in enumerate(groups):
        if "params" not in group:
            raise ValueError(f"param group {index} has no 'params': {dict(group)!r}")
        options = {k: v for k, v in group.items() if k != "params"}
        for param in group["params"]:
            entry = merged.setdefault(id(param), {"params": [param]})
            entry.update(options)
    return list(merged.values())


def reduce_param_groups(groups: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The fewest groups that give every parameter the same options as ``groups`` do.

    Parameters whose options are equal share one group (order of first appearance is kept),
    which keeps the optimizer, and a graph compiled from it, small. Options of a parameter
    listed twice are merged as in :func:`expand_param_groups`.
    """
    reduced: Dict[Tuple[Tuple[str, str], ...], Dict[str, Any]] = {}
    for entry in expand_param_groups(groups):
        options = {k: v for k, v in entry.items() if k != "params"}
        signature = tuple(sorted((str(k), repr(v)) for k, v in options.items()))
        reduced.setdefault(signature, {**options, "params": []})["params"].extend(entry["params"])
    return list(reduced.values())


def _base_options(
    base_lr: Optional[float],
    weight_decay: Optional[float],
    clip_max: Optional[float],
    clip_type: Optional[float],
) -> Dict[str, Any]:
    options: Dict[str, Any] = {}
    if base_lr is not None:
        options["lr"] = base_lr
    if weight_decay is not None:
        options["weight_decay"] = weight_decay
    if clip_max is not None:
        if clip_max <= 0:
            raise ValueError(
                f"clip_grad_max_norm must be positive, got {clip_max}; set it to None to turn "
                "clipping off"
            )
        options["clip_grad_max_norm"] = float(clip_max)
        options["clip_grad_norm_type"] = 2.0 if clip_type is None else float(clip_type)
    return options


def _named_trainable(model: flow.nn.Module) -> Iterator[Tuple[str, Any, flow.nn.Module]]:
    """``(full name, parameter, owning module)`` of each trainable parameter, once each."""
    seen: Set[int] = set()
    for module_name, module in model.named_modules():
        for param_name, param in module.named_parameters(recurse=False):
            if param is None or not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            yield (f"{module_name}.{param_name}" if module_name else param_name), param, module


def _check_overrides(overrides: Any) -> Dict[str, Dict[str, Any]]:
    if overrides is None:
        return {}
    if not hasattr(overrides, "items"):
        raise TypeError(
            f"overrides maps parameter names to option dicts, e.g. "
            f"{{'pos_embed': {{'weight_decay': 0.0}}}}; got {type(overrides).__name__}"
        )
    checked = {}
    for key, value in overrides.items():
        if not hasattr(value, "items"):
            raise TypeError(
                f"overrides[{key!r}] must be a dict of optimizer options such as "
                f"{{'weight_decay': 0.0}}, got {value!r}"
            )
        if "params" in value:
            raise ValueError(f"overrides[{key!r}] may not set 'params'; it names options only")
        checked[str(key)] = dict(value.items())
    return checked


#: Parameter names LiBai's ready configs and projects set overrides for (ViT's positional
#: embedding and class token, ResMLP's affine and scale parameters). LiBai ignores an override
#: that matches nothing, and its configs rely on it (ConvNeXt's config keeps ViT's
#: ``pos_embed`` / ``cls_token`` overrides): for these names a miss is a warning, not an error.
LIBAI_OVERRIDE_NAMES = frozenset(
    {"pos_embed", "cls_token", "alpha", "beta", "gamma_1", "gamma_2"}
)


def _check_all_used(overrides: Dict[str, Any], used: Set[str], model: flow.nn.Module) -> None:
    unused = [key for key in overrides if key not in used]
    known_misses = [key for key in unused if key in LIBAI_OVERRIDE_NAMES]
    if known_misses:
        logger.warning(
            f"optimizer overrides {known_misses} match no trainable parameter of "
            f"{type(model).__name__}; ignored (LiBai's configs set them for models that have them)"
        )
    unused = [key for key in unused if key not in LIBAI_OVERRIDE_NAMES]
    if unused:
        names = [name for name, _, _ in _named_trainable(model)]
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        raise ValueError(
            f"overrides {unused} match no trainable parameter of {type(model).__name__}; use a "
            f"full parameter name or its last part. Parameters: {shown}"
        )
