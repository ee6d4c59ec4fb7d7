"""Logits -> labelled scores, shared by the classification pipelines.

The rules are Hugging Face's and LiBai's: ``function_to_apply`` defaults to a sigmoid for one
output and a softmax for several; a record is the best ``{"label", "score"}``, or every
label's when ``return_all_scores`` (or ``top_k=None``/``k``) asks for it, best first for
``top_k``, in label order for ``return_all_scores``.
"""
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np

__all__ = ["label_names", "score_records"]

Record = Dict[str, Any]


def label_names(num_labels: int, id2label: Optional[Mapping[Any, str]] = None) -> List[str]:
    """Names of the labels: ``id2label`` (keys may be str, as in config.json) or LiBai's
    ``Label_{i}``."""
    if id2label:
        table = {int(k): v for k, v in id2label.items()}
        return [table.get(i, f"Label_{i}") for i in range(num_labels)]
    return [f"Label_{i}" for i in range(num_labels)]


def _apply(logits: np.ndarray, function: str) -> np.ndarray:
    if function == "softmax":
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True)
    if function == "sigmoid":
        return 1.0 / (1.0 + np.exp(-logits))
    if function == "none":
        return logits
    raise ValueError(f"function_to_apply={function!r}; use 'softmax', 'sigmoid' or 'none'")


def score_records(
    logits: np.ndarray,
    labels: List[str],
    function_to_apply: Optional[str] = None,
    return_all_scores: bool = False,
    top_k: Union[int, None, str] = "default",
) -> List[Union[Record, List[Record]]]:
    """One record (or list of records) per row of ``logits`` ``[batch, num_labels]``."""
    logits = np.asarray(logits, dtype=np.float64)
    function = (function_to_apply or ("sigmoid" if logits.shape[-1] == 1 else "softmax")).lower()
    scores = _apply(logits, function)
    out: List[Union[Record, List[Record]]] = []
    for row in scores:
        every = [{"label": labels[i], "score": float(s)} for i, s in enumerate(row)]
        if return_all_scores:
            out.append(every)
        elif top_k == "default":
            out.append(every[int(row.argmax())])
        else:
            ranked = sorted(every, key=lambda r: -r["score"])
            out.append(ranked if top_k is None else ranked[: int(top_k)])
    return out
