"""An evaluator written for LiBai subclasses ``ClsEvaluator`` and keeps its own per-batch
records in ``self._predictions`` (NeRF's PSNR evaluator does); ``reset`` empties them."""
from collections import OrderedDict

import oneflow as flow

from libai.evaluation import ClsEvaluator


class MeanErrorEvaluator(ClsEvaluator):
    def __init__(self):
        super().__init__(topk=(1,))

    def process(self, inputs, outputs):
        error = (outputs["prediction"] - inputs["target"]).abs().mean()
        self._predictions.append({"error": float(error.item())})

    def evaluate(self):
        errors = [p["error"] for p in self._predictions]
        return OrderedDict(error=sum(errors) / len(errors))


def test_a_subclass_records_batches_in_predictions():
    evaluator = MeanErrorEvaluator()
    assert evaluator.topk == (1,) and evaluator._predictions == []
    evaluator.process({"target": flow.tensor([1.0, 2.0])}, {"prediction": flow.tensor([1.0, 4.0])})
    evaluator.process({"target": flow.tensor([0.0])}, {"prediction": flow.tensor([3.0])})
    assert evaluator.evaluate() == {"error": (1.0 + 3.0) / 2}
    evaluator.reset()
    assert evaluator._predictions == []
