"""Readable messages about state-dict keys that did not match, grouped by module.

A model with many layers produces hundreds of missing or unexpected keys that differ only in
their last component (``encoder.layers.0.mlp.weight``, ``....bias``); grouping them by the part
before the last ``.`` (``encoder.layers.0.mlp.{bias, weight}``) makes the message readable.
These are LiBai's ``libai.utils.checkpoint.get_missing_parameters_message`` /
``get_unexpected_parameters_message``, which projects call after their own weight loading;
the text is LiBai's, without terminal colours.
"""
from typing import Dict, Iterable, List

__all__ = ["get_missing_parameters_message", "get_unexpected_parameters_message", "group_keys"]


def group_keys(keys: Iterable[str]) -> Dict[str, List[str]]:
    """``{prefix: [last components]}``, prefixes in first-seen order; a key without a ``.``
    is its own prefix with no components."""
    groups: Dict[str, List[str]] = {}
    for key in keys:
        head, dot, tail = key.rpartition(".")
        if dot:
            groups.setdefault(head, []).append(tail)
        else:
            groups.setdefault(key, [])
    return groups


def _one_line(prefix: str, tails: List[str]) -> str:
    if not tails:
        return prefix
    if len(tails) == 1:
        return f"{prefix}.{tails[0]}"
    return prefix + ".{" + ", ".join(tails) + "}"


def _message(header: str, keys: Iterable[str]) -> str:
    lines = ["  " + _one_line(prefix, tails) for prefix, tails in group_keys(keys).items()]
    return header + "\n".join(lines)


def get_missing_parameters_message(keys: List[str]) -> str:
    """Report keys the model has and the checkpoint lacks."""
    return _message("Some model parameters or buffers are not found in the checkpoint:\n", keys)


def get_unexpected_parameters_message(keys: List[str]) -> str:
    """Report keys the checkpoint has and the model lacks."""
    return _message("The checkpoint state_dict contains keys that are not used by the model:\n", keys)
