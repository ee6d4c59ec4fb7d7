"""LossKeyCompose: named, weighted losses built from a registry-style ``loss`` dict.

Users of registry-based frameworks describe a model's losses as::

    loss=dict(
        loss1=[dict(name="CrossEntropyLoss", param=dict(lambda_weight=10.0))],
        loss2=[dict(name="L1Loss", param=dict(lambda_weight=1.0), input_name=["pred", "target"])],
    )

``LossKeyCompose(loss)`` turns that into a module: called with the model's outputs (a dict of
tensors) it returns ``{"loss1": 10 * ce, "loss2": 1 * l1}``. A model returns that dict from
``forward``; the trainer sums every ``*loss*`` entry into the loss it optimises and logs each
one under its key (metrics.json, TensorBoard).

Why it lives in ``libai.layers``: it is a model-agnostic building block (like
``ParallelCrossEntropyLoss``), used by models and projects alike, and needs only the config
package's ``LOSS_REGISTRY`` below it.
"""
from collections.abc import Mapping
from typing import Any, Dict, List, Tuple

import oneflow as flow
from oneflow import nn

from libai.config.registry import LOSS_REGISTRY

__all__ = ["LossKeyCompose", "LossInputError", "DEFAULT_INPUT_NAME"]

# The outputs a loss reads when its entry gives no input_name: (prediction, target).
DEFAULT_INPUT_NAME: Tuple[str, ...] = ("pred", "target")

_ENTRY_KEYS = ("name", "param", "input_name")


class LossInputError(KeyError):
    """A loss reads an output the model did not return."""

    def __str__(self) -> str:  # KeyError would print the message inside quotes
        return str(self.args[0]) if self.args else ""


class LossKeyCompose(nn.Module):
    """Weighted losses grouped under keys; ``forward(outputs) -> {key: weighted loss}``.

    Args:
        loss_dict: ``{key: [entry, ...]}`` (a single entry may stand without the list). An entry
            is ``dict(name=<LOSS_REGISTRY name>, param=dict(lambda_weight=w, **loss_kwargs),
            input_name=[output, ...])``. ``lambda_weight`` defaults to 1; ``input_name`` to
            ``["pred", "target"]`` (:data:`DEFAULT_INPUT_NAME`); the named outputs are passed
            to the loss positionally, in that order. Loss arguments may also be written next
            to ``name`` instead of inside ``param``. Another ``LossKeyCompose`` is accepted
            too (its entries are rebuilt), so a model may wrap whatever it is given.

    The value of each key is the sum over its entries of ``lambda_weight * loss(*inputs)``.
    Keys must contain ``"loss"``: the trainer optimises and logs only such entries of a
    model's output, and a key without it would silently not be trained.

    Raises:
        ValueError: a key lacks "loss", an entry is malformed, or the list is empty.
        RegistryError: an entry names an unknown loss (with the closest registered names).
    """

    def __init__(self, loss_dict: Any) -> None:
        super().__init__()
        if isinstance(loss_dict, LossKeyCompose):
            loss_dict = loss_dict.config
        if not isinstance(loss_dict, Mapping) or not loss_dict:
            raise ValueError(
                "LossKeyCompose needs a non-empty dict {key: [dict(name=..., param=dict("
                "lambda_weight=...), input_name=[...]), ...]}, got " + repr(loss_dict)
            )
        self.config: Dict[str, List[Dict[str, Any]]] = {}
        self.losses = nn.ModuleDict()
        self.weights: Dict[str, List[float]] = {}
        self.input_names: Dict[str, List[Tuple[str, ...]]] = {}
        for key, entries in loss_dict.items():
            key = str(key)
            if "loss" not in key:
                raise ValueError(
                    f"LossKeyCompose key {key!r} does not contain 'loss': the trainer sums and "
                    f"logs only '*loss*' outputs, so this loss would never be trained. Rename "
                    f"it, e.g. {key + '_loss'!r}"
                )
            if isinstance(entries, Mapping):
                entries = [entries]
            entries = list(entries)
            if not entries:
                raise ValueError(f"LossKeyCompose key {key!r} has no losses; give at least one")
            modules = nn.ModuleList()
            self.config[key], self.weights[key], self.input_names[key] = [], [], []
            for i, entry in enumerate(entries):
                module, weight, inputs, plain = _build_entry(entry, f"{key}[{i}]")
                modules.append(module)
                self.weights[key].append(weight)
                self.input_names[key].append(inputs)
                self.config[key].append(plain)
            self.losses[key] = modules

    def forward(self, outputs: Any) -> Dict[str, flow.Tensor]:
        """``{key: sum of lambda_weight * loss(*[outputs[n] for n in input_name])}``.

        ``outputs`` may also be a tuple (or list) of tensors, as LiBai's seed framework calls it
        (``self.loss((fake_data, target_data))``): each loss then takes them in its
        ``input_name`` order, positionally.

        Raises:
            LossInputError: an ``input_name`` is not among ``outputs`` (the message names the
                missing output, the loss that wanted it and the outputs there are).
        """
        result: Dict[str, flow.Tensor] = {}
        for key, modules in self.losses.items():
            total = None
            for i, module in enumerate(modules):
                names = self.input_names[key][i]
                if isinstance(outputs, (tuple, list)):
                    inputs = _positional(outputs, names, f"{key}[{i}]", self.config[key][i]["name"])
                else:
                    inputs = [_output(outputs, name, f"{key}[{i}]", self.config[key][i]["name"])
                              for name in names]
                value = module(*inputs)
                weight = self.weights[key][i]
                if weight != 1.0:
                    value = value * weight
                total = value if total is None else total + value
            result[key] = total
        return result

    def extra_repr(self) -> str:
        parts = []
        for key in self.config:
            terms = [
                f"{w}*{c['name']}({', '.join(n)})"
                for w, c, n in zip(self.weights[key], self.config[key], self.input_names[key])
            ]
            parts.append(f"{key} = {' + '.join(terms)}")
        return "; ".join(parts)


def _plain(value: Any) -> Any:
    """Mappings and lists as plain Python (omegaconf containers included)."""
    if isinstance(value, Mapping) or hasattr(value, "items") and hasattr(value, "keys"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        return [_plain(v) for v in value]
    return value


def _build_entry(entry: Any, where: str) -> Tuple[nn.Module, float, Tuple[str, ...], Dict[str, Any]]:
    """The loss module, its weight, its input names and the entry as plain data."""
    if not (isinstance(entry, Mapping) or hasattr(entry, "keys")) or "name" not in entry:
        raise ValueError(
            f"LossKeyCompose entry {where} must be dict(name=<registered loss>, param=dict("
            f"lambda_weight=...), input_name=[...]), got {entry!r}"
        )
    plain = _plain(entry)
    params = dict(plain.get("param") or {})
    params.update({k: v for k, v in plain.items() if k not in _ENTRY_KEYS})
    weight = float(params.pop("lambda_weight", 1.0))
    inputs = plain.get("input_name")
    inputs = DEFAULT_INPUT_NAME if inputs is None else (
        (inputs,) if isinstance(inputs, str) else tuple(str(n) for n in inputs))
    if not inputs:
        raise ValueError(f"LossKeyCompose entry {where}: input_name is empty; name the outputs it reads")
    loss_class = LOSS_REGISTRY.get(plain["name"])
    try:
        module = loss_class(**params)
    except TypeError as error:
        raise TypeError(f"LossKeyCompose entry {where} ({plain['name']}): {error}") from error
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"LossKeyCompose entry {where}: {plain['name']} built a {type(module).__name__}, "
            "not a oneflow.nn.Module"
        )
    return module, weight, inputs, {"name": plain["name"], "param": dict(params, lambda_weight=weight),
                                    "input_name": list(inputs)}


def _positional(outputs: Any, names: Tuple[str, ...], where: str, loss_name: str) -> List[Any]:
    if len(outputs) != len(names):
        raise LossInputError(
            f"LossKeyCompose: loss {where} ({loss_name}) takes {len(names)} inputs "
            f"({', '.join(names)}), but it was called with a tuple of {len(outputs)}; pass them in "
            "that order, or a dict of named outputs"
        )
    return list(outputs)


def _output(outputs: Mapping, name: str, where: str, loss_name: str) -> Any:
    if name in outputs:
        return outputs[name]
    available = ", ".join(repr(str(k)) for k in outputs.keys()) or "none"
    raise LossInputError(
        f"LossKeyCompose: loss {where} ({loss_name}) reads the output {name!r}, which is not "
        f"among the model outputs ({available}). Set its input_name to outputs the model passes "
        f"in, or have the model add {name!r} to the dict it hands to the loss"
    )
