"""Apply a family's rules to a whole checkpoint, checking every name and shape.

Import: every libai tensor must come from the checkpoint with the shape the built model has;
every checkpoint tensor must be used, be a harmless buffer, a tied copy equal to its original,
or belong to a head the libai class does not have. Anything else is an error naming the keys,
never a tensor left at its random initial value (unless the caller asked with
``strict=False``, and then the report lists it and it is logged).
"""
import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from libai.models.pretrained.mapping import FamilyMapping

__all__ = ["LoadReport", "PretrainedLoadError", "to_libai", "to_hf"]

Shape = Tuple[int, ...]
logger = logging.getLogger(__name__)


class PretrainedLoadError(ValueError):
    """A checkpoint does not fit the libai model: the message names every offending key."""


@dataclass
class LoadReport:
    """What an import found. ``missing``: libai tensors the checkpoint lacks;
    ``unexpected``: checkpoint tensors nothing uses; ``mismatched``: ``(libai name, HF names,
    checkpoint-derived shape, model shape)``; ``unused_heads``: tensors of heads or parts the
    libai model does not have (normal when loading a base model from a head checkpoint, or a
    BERT built with ``add_pooler=False``); they are logged."""

    missing: List[str] = field(default_factory=list)
    unexpected: List[str] = field(default_factory=list)
    mismatched: List[Tuple[str, Tuple[str, ...], Shape, Shape]] = field(default_factory=list)
    unused_heads: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.mismatched)

    def describe(self, where: str, target: str) -> str:
        lines = [f"the checkpoint {where} does not fit {target}:"]
        if self.missing:
            lines.append(f"  missing from the checkpoint ({len(self.missing)}): {_first(self.missing)}")
        if self.unexpected:
            lines.append(f"  unexpected in the checkpoint ({len(self.unexpected)}): "
                         f"{_first(self.unexpected)}")
        for ours, theirs, got, want in self.mismatched[:_SHOWN]:
            lines.append(f"  shape mismatch: {ours} (from {', '.join(theirs)}) is {got} in the "
                         f"checkpoint but {want} in the model")
        if len(self.mismatched) > _SHOWN:  # a whole model of another size: the first few say it
            lines.append(f"  ... and {len(self.mismatched) - _SHOWN} more shape mismatches "
                         f"({len(self.mismatched)} in all)")
        lines.append("Check that config.json belongs to these weights and that overrides do not "
                     "change sizes; pass strict=False to keep the model's own values for missing "
                     "tensors (each is logged).")
        return "\n".join(lines)


_SHOWN = 5  # entries of each kind an error lists (a wrong-size model mismatches every tensor)


def _first(names: List[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f", ... and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def to_libai(
    family: FamilyMapping,
    cfg: Mapping[str, Any],
    target: str,
    state: Dict[str, np.ndarray],
    expected: Mapping[str, Shape],
) -> Tuple[Dict[str, np.ndarray], LoadReport]:
    """Hugging Face ``state`` -> libai arrays for the tensors named in ``expected``."""
    state = family.split_for_import(family.normalise_keys(dict(state)), cfg)
    report = LoadReport()
    used = set()
    out: Dict[str, np.ndarray] = {}
    rules = {rule.ours: rule for rule in family.rules(cfg, target)}
    for rule in rules.values():
        if rule.ours not in expected:  # a part this model was built without (e.g. no pooler)
            report.unused_heads.extend(k for k in rule.theirs if k in state)
            used.update(rule.theirs)
    for name, shape in expected.items():
        rule = rules.get(name)
        if rule is None:
            report.missing.append(f"{name} (no Hugging Face tensor maps to it)")
            continue
        absent = [k for k in rule.theirs if k not in state]
        if absent:
            report.missing.append(f"{', '.join(absent)} (for {name})")
            continue
        used.update(rule.theirs)
        array = np.asarray(rule.load(*[state[k] for k in rule.theirs]), dtype=np.float32)
        if tuple(array.shape) != tuple(shape):
            report.mismatched.append((name, rule.theirs, tuple(array.shape), tuple(shape)))
            continue
        out[name] = array
    for alias, original in family.tied(cfg, target).items():
        if alias in state and original in state:
            if state[alias].shape != state[original].shape or not np.array_equal(state[alias], state[original]):
                report.unexpected.append(
                    f"{alias} (differs from {original}, but {target} ties them: an untied head "
                    "cannot be represented)"
                )
            used.add(alias)
    for key in sorted(set(state) - used):
        if family.is_ignorable(key):
            continue
        if family.hf_head_keys and key.startswith(family.hf_head_keys):
            report.unused_heads.append(key)
        else:
            report.unexpected.append(key)
    return out, report


def to_hf(
    family: FamilyMapping, cfg: Mapping[str, Any], target: str, ours: Mapping[str, np.ndarray]
) -> Dict[str, np.ndarray]:
    """libai arrays (full values) -> Hugging Face arrays by name, through the same rules."""
    out: Dict[str, np.ndarray] = {}
    rules = family.rules(cfg, target)
    covered = {rule.ours for rule in rules}
    left = sorted(set(ours) - covered)
    if left:
        raise ValueError(f"no Hugging Face name for libai tensors {left}; cannot export {target}")
    absent = [rule.ours for rule in rules if rule.ours not in ours]
    if absent:  # built without that part (e.g. no pooler): transformers will say it initialises it
        logger.warning("%s has no %s; the export leaves the Hugging Face tensors out", target,
                       ", ".join(absent))
    for rule in rules:
        if rule.ours not in ours:
            continue
        parts: Sequence[np.ndarray] = rule.save(np.asarray(ours[rule.ours], dtype=np.float32))
        for name, array in zip(rule.theirs, parts):
            out[name] = np.ascontiguousarray(array, dtype=np.float32)
    return family.fuse_for_export(out, cfg)
