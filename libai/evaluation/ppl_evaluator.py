"""Perplexity of a language model."""
import math
from collections import OrderedDict
from typing import Any, Dict, Optional

import oneflow as flow

from libai.evaluation.evaluator import DatasetEvaluator, optional_field, require_field

__all__ = ["PPLEvaluator", "IGNORE_INDEX"]

IGNORE_INDEX = -100


class PPLEvaluator(DatasetEvaluator):
    """Perplexity: ``exp`` of the mean token cross-entropy over the whole test set.

    Reads ``outputs["prediction_scores"]`` (``[B, S, V]`` logits) and the ``[B, S]`` token ids
    ``inputs[label_field]``; by default ``"labels"`` (GPT), or ``"lm_labels"`` when the inputs have
    no ``"labels"`` (the BERT and T5 pretraining datasets' name). A position counts unless its label is ``-100`` or an optional
    ``loss_mask`` (``[B, S]``, looked up in the inputs, then the outputs) is 0 there. The mean
    is over tokens, not batches, so batches of different lengths weigh what they contain.

    A model that returns only its losses in eval mode (LiBai's Llama, Baichuan, ... SFT models
    return ``{"lm_loss": loss}``) is evaluated as LiBai's ``PPLEvaluator`` does it: for each
    scalar output ``k``, ``k_PPL`` is the mean over batches of ``exp(min(20, loss))``.
    """

    def __init__(self, label_field: Optional[str] = None) -> None:
        self.label_field = label_field
        self.reset()

    def reset(self) -> None:
        self._nll_sum = 0.0
        self._tokens = 0
        self._loss_ppl: "OrderedDict[str, list]" = OrderedDict()

    def process(self, inputs: Dict[str, Any], outputs: Dict[str, Any]) -> None:
        if _losses_only(outputs):
            for key, value in outputs.items():
                self._loss_ppl.setdefault(key, []).append(math.exp(min(20.0, float(value.item()))))
            return
        logits = require_field(outputs, "prediction_scores", "outputs", "PPLEvaluator")
        field = self.label_field
        if field is None:
            field = "lm_labels" if "labels" not in inputs and "lm_labels" in inputs else "labels"
        labels = require_field(inputs, field, "inputs", "PPLEvaluator")
        if logits.ndim != 3 or tuple(labels.shape) != tuple(logits.shape[:2]):
            raise ValueError(
                f"PPLEvaluator expects prediction_scores [batch, seq, vocab] and labels "
                f"[batch, seq]; got {tuple(logits.shape)} and {tuple(labels.shape)}"
            )
        labels = labels.to(device=logits.device, dtype=flow.int64)
        mask = labels != IGNORE_INDEX
        loss_mask = optional_field(inputs, "loss_mask")
        if loss_mask is None:
            loss_mask = optional_field(outputs, "loss_mask")
        if loss_mask is not None:
            mask = mask & (loss_mask.to(logits.device).reshape(labels.shape) != 0)
        _check_label_range(labels, mask, int(logits.shape[-1]))
        safe_labels = flow.where(mask, labels, flow.zeros_like(labels))
        log_probs = flow.log_softmax(logits.to(flow.float32), dim=-1)
        nll = -flow.gather(log_probs, -1, safe_labels.unsqueeze(-1)).squeeze(-1)
        self._nll_sum += float((nll * mask.to(nll.dtype)).sum().item())
        self._tokens += int(mask.sum().item())

    def evaluate(self) -> "OrderedDict[str, float]":
        if self._loss_ppl and self._tokens == 0:
            return OrderedDict((f"{k}_PPL", sum(v) / len(v)) for k, v in self._loss_ppl.items())
        if self._tokens == 0:
            raise RuntimeError(
                "PPLEvaluator has no tokens to evaluate: no batch was processed, or every label "
                "is -100 / masked out by loss_mask"
            )
        return OrderedDict([("PPL", math.exp(self._nll_sum / self._tokens))])


def _check_label_range(labels: flow.Tensor, mask: flow.Tensor, vocab: int) -> None:
    counted = labels[mask]
    if counted.numel() == 0:
        return
    low, high = int(counted.min().item()), int(counted.max().item())
    if low < 0 or high >= vocab:
        raise ValueError(
            f"PPLEvaluator: labels range over [{low}, {high}] but prediction_scores has "
            f"{vocab} classes; use {IGNORE_INDEX} for positions to ignore"
        )


def _losses_only(outputs: Any) -> bool:
    """A non-empty dict of scalar tensors and no ``prediction_scores`` (see the class doc)."""
    if not isinstance(outputs, dict) or not outputs or "prediction_scores" in outputs:
        return False
    return all(isinstance(v, flow.Tensor) and v.numel() == 1 for v in outputs.values())
