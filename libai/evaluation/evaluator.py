"""The evaluator interface: what :func:`inference_on_dataset` feeds, and how results come back.

An evaluator sees every sample of the test set exactly once, as full local tensors (global
tensors are gathered to every rank before :meth:`DatasetEvaluator.process`), so it only
accumulates statistics; there is no cross-rank reduction to write, and every rank returns the
same results.
"""
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Dict, Iterable, List, Optional

__all__ = ["DatasetEvaluator", "DatasetEvaluators", "require_field"]


class DatasetEvaluator:
    """Base class of the metrics computed over a test set.

    Subclasses override:

    * :meth:`reset` to clear the accumulated statistics (called before each evaluation);
    * :meth:`process` to accumulate one batch;
    * :meth:`evaluate` to turn the statistics into named results.
    """

    def reset(self) -> None:
        """Forget everything seen so far; :func:`inference_on_dataset` calls it first."""

    def process(self, inputs: Dict[str, Any], outputs: Dict[str, Any]) -> None:
        """Accumulate one batch.

        Args:
            inputs: the model's keyword inputs of this batch (labels included), as full local
                tensors, with any padding rows of the last batch removed.
            outputs: the dict the model returned, converted the same way.
        """

    def evaluate(self) -> "OrderedDict[str, Any]":
        """Results over every processed sample, e.g. ``{"Acc@1": 76.1}``."""
        raise NotImplementedError(f"{type(self).__name__} must implement evaluate()")


class DatasetEvaluators(DatasetEvaluator):
    """Several evaluators run over the same batches; their results are merged into one dict.

    Two evaluators reporting the same result name is an error rather than a silent overwrite.
    """

    def __init__(self, evaluators: Iterable[DatasetEvaluator]) -> None:
        self._evaluators: List[DatasetEvaluator] = list(evaluators)
        for evaluator in self._evaluators:
            if not isinstance(evaluator, DatasetEvaluator):
                raise TypeError(
                    f"DatasetEvaluators takes DatasetEvaluator instances, got "
                    f"{type(evaluator).__name__}; subclass libai.evaluation.DatasetEvaluator"
                )

    @property
    def evaluators(self) -> List[DatasetEvaluator]:
        return list(self._evaluators)

    def reset(self) -> None:
        for evaluator in self._evaluators:
            evaluator.reset()

    def process(self, inputs: Dict[str, Any], outputs: Dict[str, Any]) -> None:
        for evaluator in self._evaluators:
            evaluator.process(inputs, outputs)

    def evaluate(self) -> "OrderedDict[str, Any]":
        merged: "OrderedDict[str, Any]" = OrderedDict()
        owner: Dict[str, str] = {}
        for evaluator in self._evaluators:
            results = evaluator.evaluate()
            if results is None:
                continue
            for key, value in results.items():
                if key in merged:
                    raise ValueError(
                        f"both {owner[key]} and {type(evaluator).__name__} report {key!r}; "
                        "give one of them a different result name"
                    )
                merged[key] = value
                owner[key] = type(evaluator).__name__
        return merged


def require_field(mapping: Any, key: str, where: str, who: str) -> Any:
    """``mapping[key]``, or an error naming the keys that *are* there.

    Args:
        mapping: the model inputs or outputs of a batch.
        key: the field the evaluator needs.
        where: ``"inputs"`` or ``"outputs"``, for the message.
        who: the evaluator's name, for the message.
    """
    if not isinstance(mapping, Mapping):
        raise TypeError(
            f"{who} expects the model {where} to be a dict, got {type(mapping).__name__}; "
            f"a model's forward should return e.g. {{'prediction_scores': logits}} in eval mode"
        )
    if key not in mapping:
        hint = (
            "return it from the model's forward in eval mode"
            if where == "outputs"
            else "add it to the dataset's Instance"
        )
        raise KeyError(
            f"{who} needs {key!r} in the model {where}, which has {sorted(mapping)}; {hint}"
        )
    return mapping[key]


def optional_field(mapping: Any, key: str) -> Optional[Any]:
    """``mapping[key]`` or ``None`` when absent."""
    return mapping.get(key) if isinstance(mapping, Mapping) else None
