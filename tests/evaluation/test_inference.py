"""inference_on_dataset: padding dropped, modes restored, eval_iter, layouts, errors."""
import os
from collections import OrderedDict

import numpy as np
import oneflow as flow
import pytest

from libai.data.structures import DistTensorData, Instance
from libai.evaluation import ClsEvaluator, DatasetEvaluator, inference_on_dataset
from libai.utils import distributed as dist
from libai.utils.testing import launch, tagged_lines

NUM_SAMPLES, NUM_CLASSES, BATCH = 10, 4, 4
RNG = np.random.RandomState(0)
SCORES = RNG.randn(NUM_SAMPLES, NUM_CLASSES).astype(np.float32)
LABELS = SCORES.argmax(axis=1)
LABELS[[1, 8, 9]] = (LABELS[[1, 8, 9]] + 1) % NUM_CLASSES  # wrong on 1, 8, 9: padding would show


class PaddedLoader:
    """Batches of BATCH sample ids; the last one padded at its end by repeating samples."""

    def __init__(self, as_dist=True):
        self.dataset = list(range(NUM_SAMPLES))
        self.as_dist = as_dist

    def __len__(self):
        return -(-NUM_SAMPLES // BATCH)

    def __iter__(self):
        for start in range(0, NUM_SAMPLES, BATCH):
            ids = list(range(start, min(start + BATCH, NUM_SAMPLES)))
            ids += ids[: BATCH - len(ids)]  # pad with repeats, at the end
            ids = np.array(ids)
            fields = {"ids": flow.tensor(ids), "labels": flow.tensor(LABELS[ids])}
            if self.as_dist:
                fields = {k: DistTensorData(v) for k, v in fields.items()}
            yield Instance(**fields)


class LookupModel(flow.nn.Module):
    """Returns the stored scores of each sample id; records its mode and grad state."""

    def __init__(self):
        super().__init__()
        self.scale = flow.nn.Parameter(flow.ones(1))
        self.seen_modes = []

    def forward(self, ids, labels=None):
        self.seen_modes.append((self.training, flow.is_grad_enabled()))
        table = flow.tensor(SCORES)
        if self.scale.is_global:  # placed like its parameter (LiBai style)
            table = table.to_global(placement=self.scale.placement, sbp=self.scale.sbp)
        scores = table[ids] * self.scale
        return {"prediction_scores": scores, "batch_total": scores.sum()}


class IdRecorder(DatasetEvaluator):
    def reset(self):
        self.ids = []

    def process(self, inputs, outputs):
        assert outputs["prediction_scores"].shape[0] == inputs["ids"].shape[0]
        self.ids.extend(inputs["ids"].numpy().tolist())

    def evaluate(self):
        return OrderedDict(samples=len(self.ids))


def _reference_acc1(ids):
    return 100.0 * float(np.mean(SCORES[ids].argmax(axis=1) == LABELS[ids]))


def test_padded_last_batch_is_counted_exactly_once():
    recorder = IdRecorder()
    results = inference_on_dataset(LookupModel(), PaddedLoader(), [recorder, ClsEvaluator((1,))])
    assert sorted(recorder.ids) == list(range(NUM_SAMPLES))
    assert results["samples"] == NUM_SAMPLES
    assert results["Acc@1"] == pytest.approx(_reference_acc1(np.arange(NUM_SAMPLES)))
    assert results["Acc@1"] == pytest.approx(70.0)


def test_model_runs_in_eval_mode_without_grad_and_mode_is_restored():
    model = LookupModel()
    model.train()
    inference_on_dataset(model, PaddedLoader(), ClsEvaluator((1,)))
    assert model.seen_modes == [(False, False)] * 3
    assert model.training
    model.eval()
    inference_on_dataset(model, PaddedLoader(), ClsEvaluator((1,)))
    assert not model.training


def test_mode_is_restored_when_the_evaluator_fails():
    model = LookupModel()
    model.train()
    with pytest.raises(KeyError, match="needs 'labels' in the model inputs"):
        inference_on_dataset(
            model, PaddedLoader(), ClsEvaluator((1,)), get_batch=lambda inst: {"ids": inst.ids.tensor}
        )
    assert model.training


def test_eval_iter_caps_the_number_of_batches():
    recorder = IdRecorder()
    inference_on_dataset(LookupModel(), PaddedLoader(), recorder, eval_iter=2)
    assert recorder.ids == list(range(8))


def test_layout_places_inputs_and_custom_get_batch_is_used(local_layout):
    recorder = IdRecorder()
    model = dist.convert_to_distributed_default_setting(LookupModel())  # global, as the layout's inputs
    results = inference_on_dataset(
        model, PaddedLoader(), [recorder, ClsEvaluator((1,))], layout=local_layout
    )
    assert sorted(recorder.ids) == list(range(NUM_SAMPLES))
    assert results["Acc@1"] == pytest.approx(70.0)

    plain = IdRecorder()
    calls = []

    def get_batch(instance):
        calls.append(instance)
        return {"ids": instance.get("ids")}  # an already-plain batch

    inference_on_dataset(LookupModel(), PaddedLoader(as_dist=False), plain, get_batch=get_batch)
    assert len(calls) == 3 and sorted(plain.ids) == list(range(NUM_SAMPLES))


def test_model_returning_a_tensor_is_an_error():
    class Bare(flow.nn.Module):
        def forward(self, ids, labels):
            return flow.zeros(ids.shape[0], 2)

    with pytest.raises(TypeError, match="needs the model to return a dict .* got Tensor"):
        inference_on_dataset(Bare(), PaddedLoader(), ClsEvaluator())


def test_two_data_parallel_ranks_evaluate_every_sample_once():
    script = os.path.join(os.path.dirname(__file__), "dist_inference_script.py")
    proc = launch(script, nproc=2, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert tagged_lines(proc.stdout, ranks=2) == [
        f"RESULT rank={r} ids={list(range(NUM_SAMPLES))} acc1={_reference_acc1(np.arange(10)):.4f}"
        for r in (0, 1)
    ]
