"""ClsEvaluator, PPLEvaluator, DatasetEvaluators and the results printer against NumPy."""
import logging
import math
from collections import OrderedDict

import numpy as np
import oneflow as flow
import pytest

from libai.evaluation import (
    ClsEvaluator,
    DatasetEvaluator,
    DatasetEvaluators,
    PPLEvaluator,
    flatten_results_dict,
    print_csv_format,
)


def numpy_topk_accuracy(scores, labels, k):
    """Percent of rows whose label scores among the k highest (no ties in random floats)."""
    label_scores = scores[np.arange(len(labels)), labels]
    rank = (scores > label_scores[:, None]).sum(axis=1)  # classes strictly better than the label
    return 100.0 * float((rank < k).mean())


def numpy_perplexity(logits, labels, mask):
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    safe = np.where(mask, labels, 0)
    nll = -np.take_along_axis(log_probs, safe[..., None], axis=-1)[..., 0]
    return math.exp(float(nll[mask].sum()) / int(mask.sum()))


def test_cls_evaluator_matches_numpy_over_uneven_batches():
    rng = np.random.RandomState(0)
    scores = rng.randn(23, 7).astype(np.float32)
    labels = rng.randint(0, 7, size=23)
    evaluator = ClsEvaluator(topk=(1, 3, 5, 10))
    evaluator.reset()
    for lo, hi in ((0, 10), (10, 23)):
        evaluator.process(
            {"labels": flow.tensor(labels[lo:hi])},
            {"prediction_scores": flow.tensor(scores[lo:hi])},
        )
    results = evaluator.evaluate()
    assert list(results) == ["Acc@1", "Acc@3", "Acc@5", "Acc@10"]
    for k in (1, 3, 5):
        assert results[f"Acc@{k}"] == pytest.approx(numpy_topk_accuracy(scores, labels, k))
    assert results["Acc@10"] == 100.0  # more than the 7 classes: always among them
    assert 0.0 < results["Acc@1"] < results["Acc@3"] < results["Acc@5"] < 100.0


def test_cls_evaluator_reset_forgets_previous_samples():
    evaluator = ClsEvaluator(topk=(1,))
    right = {"prediction_scores": flow.tensor([[0.0, 1.0]])}
    evaluator.process({"labels": flow.tensor([0])}, right)
    evaluator.reset()
    evaluator.process({"labels": flow.tensor([1])}, right)
    assert evaluator.evaluate() == OrderedDict([("Acc@1", 100.0)])


def test_ppl_evaluator_matches_numpy_with_ignored_and_masked_tokens():
    rng = np.random.RandomState(1)
    logits = rng.randn(4, 5, 11).astype(np.float32)
    labels = rng.randint(0, 11, size=(4, 5))
    labels[0, :2] = -100
    labels[3, 4] = -100
    loss_mask = (rng.rand(4, 5) > 0.3).astype(np.int64)
    evaluator = PPLEvaluator()
    for lo, hi in ((0, 1), (1, 4)):  # batches of 1 and 3 sequences: a per-token mean
        evaluator.process(
            {"labels": flow.tensor(labels[lo:hi]), "loss_mask": flow.tensor(loss_mask[lo:hi])},
            {"prediction_scores": flow.tensor(logits[lo:hi])},
        )
    expected = numpy_perplexity(logits, labels, (labels != -100) & (loss_mask != 0))
    assert evaluator.evaluate()["PPL"] == pytest.approx(expected, rel=1e-5)


def test_ppl_evaluator_reads_loss_mask_from_outputs_and_works_without_one():
    rng = np.random.RandomState(2)
    logits = rng.randn(2, 3, 5).astype(np.float32)
    labels = rng.randint(0, 5, size=(2, 3))
    mask = np.array([[1, 0, 1], [1, 1, 0]])
    with_mask, without = PPLEvaluator(), PPLEvaluator()
    with_mask.process(
        {"labels": flow.tensor(labels)},
        {"prediction_scores": flow.tensor(logits), "loss_mask": flow.tensor(mask)},
    )
    without.process({"labels": flow.tensor(labels)}, {"prediction_scores": flow.tensor(logits)})
    assert with_mask.evaluate()["PPL"] == pytest.approx(
        numpy_perplexity(logits, labels, mask.astype(bool)), rel=1e-5
    )
    assert without.evaluate()["PPL"] == pytest.approx(
        numpy_perplexity(logits, labels, np.ones_like(mask, dtype=bool)), rel=1e-5
    )


class _Constant(DatasetEvaluator):
    def __init__(self, **results):
        self._results = results
        self.batches = 0

    def reset(self):
        self.batches = 0

    def process(self, inputs, outputs):
        self.batches += 1

    def evaluate(self):
        return OrderedDict(self._results)


def test_dataset_evaluators_feed_all_and_merge_results_in_order():
    first, second = _Constant(a=1.0), _Constant(b=2.0, c=3.0)
    both = DatasetEvaluators([first, second])
    both.reset()
    both.process({}, {})
    both.process({}, {})
    assert (first.batches, second.batches) == (2, 2)
    assert both.evaluate() == OrderedDict([("a", 1.0), ("b", 2.0), ("c", 3.0)])


def test_dataset_evaluators_refuse_duplicate_result_names():
    both = DatasetEvaluators([_Constant(a=1.0), ClsEvaluator(topk=(1,)), _Constant(a=2.0)])
    both.process({"labels": flow.tensor([0])}, {"prediction_scores": flow.tensor([[1.0, 0.0]])})
    with pytest.raises(ValueError, match="both _Constant and _Constant report 'a'"):
        both.evaluate()
    with pytest.raises(TypeError, match="takes DatasetEvaluator instances, got dict"):
        DatasetEvaluators([{}])


def test_missing_fields_name_the_keys_that_exist():
    cls = ClsEvaluator()
    with pytest.raises(KeyError, match=r"needs 'prediction_scores' in the model outputs, which has \['logits'\]"):
        cls.process({"labels": flow.tensor([0])}, {"logits": flow.tensor([[1.0]])})
    with pytest.raises(KeyError, match=r"needs 'labels' in the model inputs, which has \['images'\]"):
        PPLEvaluator().process(
            {"images": flow.tensor([0])}, {"prediction_scores": flow.zeros(1, 2, 3)}
        )
    with pytest.raises(TypeError, match="expects the model outputs to be a dict, got Tensor"):
        cls.process({"labels": flow.tensor([0])}, flow.zeros(1, 2))


def test_bad_shapes_and_labels_are_errors():
    with pytest.raises(ValueError, match=r"shape \[batch, classes\]"):
        ClsEvaluator().process({"labels": flow.tensor([0])}, {"prediction_scores": flow.zeros(1, 2, 3)})
    with pytest.raises(ValueError, match=r"labels range over \[0, 7\] but prediction_scores has 5"):
        PPLEvaluator().process(
            {"labels": flow.tensor([[0, 7]])}, {"prediction_scores": flow.zeros(1, 2, 5)}
        )
    with pytest.raises(ValueError, match="topk must be positive integers"):
        ClsEvaluator(topk=(0, 1))


def test_evaluate_without_samples_is_an_error():
    with pytest.raises(RuntimeError, match="ClsEvaluator has no samples"):
        ClsEvaluator().evaluate()
    with pytest.raises(RuntimeError, match="PPLEvaluator has no tokens"):
        PPLEvaluator().evaluate()


def test_print_csv_format_logs_a_table(caplog):
    results = OrderedDict([("Acc@1", 75.5), ("Acc@5", 92.25)])
    with caplog.at_level(logging.INFO, logger="libai.evaluation.results"):
        text = print_csv_format(results)
    assert text in caplog.text
    lines = text.splitlines()
    assert any(line.replace(" ", "") == "|Acc@1|75.5000|" for line in lines)
    assert "copypaste: Acc@1,Acc@5" in lines
    assert "copypaste: 75.5000,92.2500" in lines


def test_nested_results_are_flattened_with_slashes():
    nested = {"imagenet": {"Acc@1": 1.0}, "PPL": 3.0}
    assert flatten_results_dict(nested) == {"imagenet/Acc@1": 1.0, "PPL": 3.0}
    with pytest.raises(TypeError, match="takes the dict an evaluator returns"):
        print_csv_format([1.0])
