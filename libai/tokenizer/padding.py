"""Padding id lists to a common length, with the attention mask that says which ids are real."""
from typing import List, Sequence, Tuple, Union

__all__ = ["PaddingArg", "check_padding_side", "pad_to_length", "pad_batch"]

#: What ``padding=`` accepts: True/"longest", "max_length", False/"do_not_pad".
PaddingArg = Union[bool, str]


def check_padding_side(side: str) -> str:
    """Validate a ``padding_side`` value."""
    if side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {side!r}")
    return side


def pad_to_length(
    ids: Sequence[int], length: int, pad_id: int, side: str = "right"
) -> Tuple[List[int], List[int]]:
    """Pad ``ids`` with ``pad_id`` up to ``length``; return (ids, attention mask).

    A sequence already ``length`` long or longer is returned unchanged (padding never cuts;
    truncation does).
    """
    missing = max(length - len(ids), 0)
    if side == "left":
        return [pad_id] * missing + list(ids), [0] * missing + [1] * len(ids)
    return list(ids) + [pad_id] * missing, [1] * len(ids) + [0] * missing


def pad_batch(
    rows: Sequence[Sequence[int]], length: int, pad_id: int, side: str = "right"
) -> Tuple[List[List[int]], List[List[int]]]:
    """Pad every row to ``length``; return (rows, masks)."""
    padded, masks = [], []
    for row in rows:
        ids, mask = pad_to_length(row, length, pad_id, side)
        padded.append(ids)
        masks.append(mask)
    return padded, masks
