"""Top-k classification accuracy."""
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Dict, List, Sequence

import oneflow as flow

from libai.evaluation.evaluator import DatasetEvaluator, require_field

__all__ = ["ClsEvaluator"]


class ClsEvaluator(DatasetEvaluator):
    """Top-k accuracy in percent, reported as ``Acc@1``, ``Acc@5``, ...

    Reads ``outputs["prediction_scores"]`` (``[B, C]`` class scores or logits) and
    ``inputs["labels"]`` (``[B]`` class indices; a BERT batch without ``labels`` is scored
    against its ``ns_labels``, which is what ``BertForClassification`` learns from it). A sample counts as correct at ``k`` when its
    label is among the ``k`` highest scores. With fewer than ``k`` classes every sample is
    correct at ``k`` (the label is always among all the classes).

    Args:
        topk: the ``k`` values to report.
    """

    def __init__(self, topk: Sequence[int] = (1, 5)) -> None:
        topk = tuple(topk)
        if not topk or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in topk):
            raise ValueError(f"ClsEvaluator: topk must be positive integers, got {topk}")
        self._topk = topk
        self.reset()

    @property
    def topk(self) -> Sequence[int]:
        """The ``k`` values (LiBai's attribute name)."""
        return self._topk

    def reset(self) -> None:
        self._correct: Dict[int, int] = {k: 0 for k in self._topk}
        self._total = 0
        # LiBai's ClsEvaluator keeps one record per batch here; evaluators written for LiBai
        # subclass it and append their own records (NeRF's NerfEvaluator: losses and PSNR)
        self._predictions: List[Dict[str, Any]] = []

    def process(self, inputs: Dict[str, Any], outputs: Dict[str, Any]) -> None:
        scores = require_field(outputs, "prediction_scores", "outputs", "ClsEvaluator")
        if isinstance(inputs, Mapping) and "labels" not in inputs and "ns_labels" in inputs:
            # a BERT batch classified by BertForClassification: its class labels are the
            # pair labels (the model reads them the same way, as LiBai's does)
            labels = inputs["ns_labels"]
        else:
            labels = require_field(inputs, "labels", "inputs", "ClsEvaluator")
        if scores.ndim != 2:
            raise ValueError(
                f"ClsEvaluator expects prediction_scores of shape [batch, classes], got "
                f"{tuple(scores.shape)}"
            )
        labels = labels.reshape(-1).to(flow.int64)
        if labels.shape[0] != scores.shape[0]:
            raise ValueError(
                f"ClsEvaluator: {labels.shape[0]} labels for {scores.shape[0]} rows of "
                "prediction_scores; they must describe the same samples"
            )
        num_classes = scores.shape[1]
        maxk = min(max(self._topk), num_classes)
        _, top_idx = flow.topk(scores, maxk, dim=1)
        hits = top_idx == labels.to(top_idx.device).unsqueeze(1)  # [B, maxk], one True at most
        for k in self._topk:
            self._correct[k] += int(hits[:, : min(k, num_classes)].sum().item())
        self._total += int(scores.shape[0])

    def evaluate(self) -> "OrderedDict[str, float]":
        if self._total == 0:
            raise RuntimeError(
                "ClsEvaluator has no samples to evaluate: the test loader yielded no batch "
                "(check the test dataset's length and train.evaluation.eval_iter)"
            )
        return OrderedDict(
            (f"Acc@{k}", 100.0 * self._correct[k] / self._total) for k in self._topk
        )
