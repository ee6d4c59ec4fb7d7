"""Correlation of predicted and true scores, for regression tasks (e.g. STS-B)."""
from collections import OrderedDict
from typing import Any, Dict, List

import numpy as np

from libai.evaluation.evaluator import DatasetEvaluator, require_field

__all__ = ["RegEvaluator"]


class RegEvaluator(DatasetEvaluator):
    """Pearson and Spearman correlation over the whole test set, reported as ``pearson``,
    ``spearman`` and their mean ``corr`` (LiBai's names; any of them is an ``eval_metric``).

    Reads ``outputs["prediction_scores"]`` and ``inputs["labels"]`` (``[B]`` targets). Scores of
    shape ``[B]`` or ``[B, 1]`` are the predictions themselves (a regression head); scores
    ``[B, C]`` with several columns predict their arg-max column, as LiBai's evaluator does
    (targets that are ordered classes). Correlations need at least two samples and some spread
    in both predictions and labels; otherwise they are NaN, as scipy reports them.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._preds: List[np.ndarray] = []
        self._labels: List[np.ndarray] = []

    def process(self, inputs: Dict[str, Any], outputs: Dict[str, Any]) -> None:
        scores = _to_numpy(require_field(outputs, "prediction_scores", "outputs", "RegEvaluator"))
        labels = _to_numpy(require_field(inputs, "labels", "inputs", "RegEvaluator")).reshape(-1)
        if scores.ndim == 2 and scores.shape[1] > 1:
            preds = scores.argmax(axis=1)
        elif scores.ndim == 1 or (scores.ndim == 2 and scores.shape[1] == 1):
            preds = scores.reshape(-1)
        else:
            raise ValueError(
                f"RegEvaluator expects prediction_scores of shape [batch], [batch, 1] or "
                f"[batch, classes], got {scores.shape}"
            )
        if preds.shape[0] != labels.shape[0]:
            raise ValueError(
                f"RegEvaluator: {labels.shape[0]} labels for {preds.shape[0]} predictions; "
                "they must describe the same samples"
            )
        self._preds.append(preds.astype(np.float64))
        self._labels.append(labels.astype(np.float64))

    def evaluate(self) -> "OrderedDict[str, float]":
        from scipy.stats import pearsonr, spearmanr  # scipy is needed by this evaluator only

        if not self._preds:
            raise RuntimeError("RegEvaluator has no samples to evaluate: no batch was processed")
        preds, labels = np.concatenate(self._preds), np.concatenate(self._labels)
        if preds.shape[0] < 2 or np.ptp(preds) == 0 or np.ptp(labels) == 0:
            pearson = spearman = float("nan")  # undefined: no spread (scipy would warn)
        else:
            pearson = float(pearsonr(preds, labels)[0])
            spearman = float(spearmanr(preds, labels)[0])
        return OrderedDict(
            [("pearson", pearson), ("spearman", spearman), ("corr", (pearson + spearman) / 2)]
        )


def _to_numpy(value: Any) -> np.ndarray:
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)
