"""LiBai's trainer contract: a step runner written from LiBai's "Training" guide, assigned as
``self._trainer`` in a DefaultTrainer subclass, trains, and every default hook keeps working.

Two guide styles: a runner that replaces ``run_step`` entirely (its own forward, backward and
optimizer step) and one that wraps ``super().run_step(get_batch, input_placement_device)``.
References are independent of the runner under test: the learning rate of each iteration from
the scheduler's formula (``lr_reference``), the losses of libai's own runner on the same config,
and the files the hooks must have written.
"""
import json
import os
import time

import numpy as np
import oneflow as flow
import pytest

from libai.data import DistTensorData, Instance
from libai.engine import DefaultTrainer
from libai.engine.trainer import EagerTrainer, GraphTrainer, TrainerBase
from libai.utils import distributed as dist

from lr_reference import warmup_cosine_lrs
from toy import LossRecorder, toy_cfg

DEFAULT_HOOKS = ["IterationTimer", "LRScheduler", "NaNLossHook", "PreemptionHandler",
                 "PeriodicCheckpointer", "EvalHook", "BestCheckpointer", "PeriodicWriter"]


class GuideEagerTrainer(EagerTrainer):
    """Written as LiBai's guide shows: its own forward, backward and update, nothing of libai's."""

    def __init__(self, model, data_loader, optimizer, grad_acc_steps=1):
        super().__init__(model, data_loader, optimizer, grad_acc_steps)
        self.previous_output = None
        self.calls = []
        self.losses = []

    def run_step(self, get_batch, input_placement_device="cuda"):
        start = time.perf_counter()
        data = next(self._data_loader_iter)
        data = get_batch(data, input_placement_device, getattr(self.data_loader, "mixup_func", None))
        data_time = time.perf_counter() - start
        loss_dict = self.model(**data)
        self.previous_output = loss_dict
        losses = sum(loss_dict.values())
        losses.backward()
        self.write_metrics(loss_dict, data_time)
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.calls.append((get_batch, input_placement_device))
        self.losses.append(float(losses))


class WrappingEagerTrainer(EagerTrainer):
    """Keeps libai's step and adds to it, through ``super().run_step(get_batch, ...)``."""

    def __init__(self, model, data_loader, optimizer, grad_acc_steps=1):
        super().__init__(model, data_loader, optimizer, grad_acc_steps)
        self.steps = 0

    def run_step(self, get_batch, input_placement_device="cuda"):
        super().run_step(get_batch, input_placement_device)
        self.steps += 1


class OneArgumentEagerTrainer(EagerTrainer):
    """The guide's shortest signature, ``run_step(self, get_batch)``."""

    def run_step(self, get_batch):
        super().run_step(get_batch)


def trainer_with(runner_cls):
    class GuideTrainer(DefaultTrainer):
        def __init__(self, cfg):
            super().__init__(cfg)
            # As LiBai's DefaultTrainer does; libai leaves the value None when it is derived.
            self._trainer = runner_cls(self.model, self.train_loader, self.optimizer,
                                       cfg.train.num_accumulation_steps)
    return GuideTrainer


def run(cfg, trainer_cls=DefaultTrainer):
    """Train ``cfg``; returns the trainer and the raw (loss, lr) of every iteration."""
    record = {}
    trainer = trainer_cls(cfg)
    trainer.register_hooks([LossRecorder.make(record)])
    trainer.train()
    return trainer, [record[i] for i in sorted(record)]


def metrics(out):
    with open(os.path.join(out, "metrics.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def assert_default_hooks_ran(trainer, out, losses):
    """The schedule stepped, checkpoints and the best model were written, evaluation ran and the
    writers logged each iteration's loss: everything the default hooks are for."""
    assert [h.name for h in trainer.hooks][:len(DEFAULT_HOOKS)] == DEFAULT_HOOKS
    lines = [m for m in metrics(out) if "total_loss" in m]
    assert [m["iteration"] for m in lines] == list(range(6))
    assert [m["lr"] for m in lines] == pytest.approx(warmup_cosine_lrs(0.05, 6, 0), rel=1e-6)
    # metrics.json holds the median of the last (up to 20) losses.
    medians = [float(np.median(losses[:i + 1])) for i in range(len(losses))]
    assert [m["total_loss"] for m in lines] == pytest.approx(medians, rel=1e-5)
    assert sorted(m["iteration"] for m in metrics(out) if "Acc@1" in m) == [2, 5]
    names = set(os.listdir(out))
    assert {"model_0000002", "model_final", "model_best", "last_checkpoint"} <= names
    with open(os.path.join(out, "last_checkpoint")) as f:
        assert f.read().strip() == "model_final"


def test_a_runner_that_replaces_run_step_trains_with_every_default_hook(tmp_path):
    out = str(tmp_path / "guide")
    trainer, record = run(toy_cfg(out), trainer_with(GuideEagerTrainer))
    runner = trainer._trainer
    # DefaultTrainer hands the runner LiBai's two arguments, every iteration.
    assert len(runner.calls) == 6
    assert all(fn == DefaultTrainer.get_batch and device is None for fn, device in runner.calls)
    assert set(runner.previous_output) == {"losses"}
    assert [loss for loss, _ in record] == pytest.approx(runner.losses, rel=1e-6)
    assert runner.losses[-1] < runner.losses[0]
    assert_default_hooks_ran(trainer, out, runner.losses)
    assert trainer.consumed_train_samples == 6 * 8


def test_replaced_step_equals_libais_step_when_both_make_the_same_plain_update(tmp_path):
    # Without clipping, libai's step is forward, backward, optimizer.step(): the guide's.
    def unclipped(name):
        cfg = toy_cfg(str(tmp_path / name))
        cfg.optim.params.clip_grad_max_norm = None
        return cfg

    _, reference = run(unclipped("default"))
    _, guide = run(unclipped("guide"), trainer_with(GuideEagerTrainer))
    np.testing.assert_allclose(guide, reference, rtol=1e-6)


@pytest.mark.parametrize("runner_cls", [WrappingEagerTrainer, OneArgumentEagerTrainer])
def test_a_runner_calling_super_run_step_gives_libais_losses_and_keeps_its_techniques(tmp_path, runner_cls):
    # Accumulation and clipping (the default optim) are on; the accumulation is derived from
    # the global batch (16 = 8 × 2), so the config's num_accumulation_steps stays None.
    _, reference = run(toy_cfg(str(tmp_path / "default"), global_batch_size=16))
    out = str(tmp_path / "wrapped")
    cfg = toy_cfg(out, global_batch_size=16)
    assert cfg.train.num_accumulation_steps is None
    trainer, wrapped = run(cfg, trainer_with(runner_cls))
    np.testing.assert_allclose(wrapped, reference, rtol=1e-6)
    runner = trainer._trainer
    # The runner built a plain OptimizerStep for itself; it updates with the configured one.
    assert runner.grad_acc_steps == 2 and runner.optimizer_step is trainer.optimizer_step
    if runner_cls is WrappingEagerTrainer:
        assert runner.steps == 6
    assert_default_hooks_ran(trainer, out, [loss for loss, _ in wrapped])


class WrappingGraphTrainer(GraphTrainer):
    def __init__(self, graph, data_loader, grad_acc_steps=1):
        super().__init__(graph, data_loader, grad_acc_steps)
        self.devices = []

    def run_step(self, get_batch, input_placement_device="cuda"):
        self.devices.append(input_placement_device)
        super().run_step(get_batch, input_placement_device)


def test_a_graph_runner_calling_super_run_step_gives_libais_losses(tmp_path):
    class GuideGraphTrainer(DefaultTrainer):
        def __init__(self, cfg):
            super().__init__(cfg)
            self._trainer = WrappingGraphTrainer(self.graph_train, self.train_loader,
                                                 cfg.train.num_accumulation_steps)

    def graph_cfg(name):
        cfg = toy_cfg(str(tmp_path / name), evaluation=dict(enabled=False))
        cfg.graph.enabled = True
        return cfg

    _, reference = run(graph_cfg("default"))
    trainer, wrapped = run(graph_cfg("wrapped"), GuideGraphTrainer)
    assert isinstance(trainer._trainer, GraphTrainer) and trainer._trainer.devices == [None] * 6
    np.testing.assert_allclose(wrapped, reference, rtol=1e-6)
    assert [lr for _, lr in wrapped] == pytest.approx(warmup_cosine_lrs(0.05, 6, 0), rel=1e-6)


def test_input_placement_device_comes_from_the_config(tmp_path):
    cfg = toy_cfg(str(tmp_path), train_iter=2, evaluation=dict(enabled=False))
    cfg.train.input_placement_device = "cpu"
    trainer, _ = run(cfg, trainer_with(GuideEagerTrainer))
    assert [device for _, device in trainer._trainer.calls] == ["cpu", "cpu"]


# ---------------------------------------------------------------------------------- get_batch
def batch(field="inputs"):
    x = flow.arange(8, dtype=flow.float32).reshape(4, 2)
    return Instance(**{field: DistTensorData(x)},
                    labels=DistTensorData(flow.tensor([0, 1, 1, 0]), placement_idx=-1))


def test_get_batch_turns_a_loader_batch_into_the_models_keyword_arguments(local_layout):
    for device in (None, "cpu", "cuda"):  # "cuda" cannot be honoured on a CPU layout
        inputs = DefaultTrainer.get_batch(batch(), device)
        assert list(inputs) == ["inputs", "labels"]
        # global in one process too, as LiBai code expects: split over the data axis
        for name, tensor in inputs.items():
            assert tensor.placement == local_layout.stage_placement(0), name
            assert list(tensor.sbp) == dist.get_nd_sbp([flow.sbp.split(0), flow.sbp.broadcast]), name
        np.testing.assert_array_equal(inputs["inputs"].numpy(), np.arange(8).reshape(4, 2))
        np.testing.assert_array_equal(inputs["labels"].numpy(), [0, 1, 1, 0])
    plain = {"inputs": flow.ones(2)}
    assert DefaultTrainer.get_batch(plain)["inputs"] is plain["inputs"]
    with pytest.raises(TypeError, match="cannot turn a batch of type list into model inputs"):
        DefaultTrainer.get_batch([1, 2])


def test_get_batch_mixes_class_labels_once():
    calls = []

    def mixup(images, labels):
        calls.append(labels.ndim)
        return images * 0.5, flow.nn.functional.one_hot(labels, 2).to(flow.float32)

    layout = dist.ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0)
    with layout:
        mixed = DefaultTrainer.get_batch(batch("images"), None, mixup)
        np.testing.assert_array_equal(mixed["images"].numpy(), np.arange(8).reshape(4, 2) * 0.5)
        assert tuple(mixed["labels"].shape) == (4, 2)
        # A batch libai's loader already mixed (soft targets) is not mixed again.
        soft = Instance(images=DistTensorData(flow.ones(4, 2)), labels=DistTensorData(mixed["labels"]))
        again = DefaultTrainer.get_batch(soft, None, mixup)
    assert calls == [1]
    np.testing.assert_array_equal(again["images"].numpy(), np.ones((4, 2)))


def test_get_batch_outside_a_layout_says_how_to_get_one():
    with pytest.raises(RuntimeError, match="no parallel layout is active"):
        DefaultTrainer.get_batch(batch(), None)


def test_input_layout_keeps_inputs_on_the_host_in_a_cuda_run():
    from libai.engine.batch import input_layout

    cpu = dist.ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0)
    assert input_layout(cpu, None) is cpu and input_layout(cpu, "cuda") is cpu
    cuda = dist.ParallelLayout(device_type="cuda", world_size=1, rank=0)
    host = input_layout(cuda, "cpu")
    assert host.device_type == "cpu" and cuda.device_type == "cuda"
    assert input_layout(cuda, "cuda") is cuda


# ---------------------------------------------------------------------------------- runner parts
def toy_runner(layout, n=16):
    from toy import ToyDataset, ToyModel
    from libai.data.build import build_image_train_loader

    flow.manual_seed(0)
    model = dist.convert_to_distributed_default_setting(ToyModel())  # LiBai's build_model does this
    loader, _, _ = build_image_train_loader(dataset=ToyDataset(n=n), train_batch_size=4, num_workers=0)
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1)
    return EagerTrainer(model, loader, optimizer, layout=layout)


def test_run_step_without_arguments_places_batches_by_the_runners_layout(local_layout):
    runner = toy_runner(local_layout)
    assert runner._data_iter is None  # the iterator is made on first use (after a resume)
    runner.train(0, 3)
    losses = [v for v, _ in runner.storage.history("total_loss").values()]
    assert len(losses) == 3 and all(np.isfinite(losses))


def test_data_loader_iter_can_be_replaced_as_libai_code_does(local_layout):
    runner = toy_runner(local_layout)
    runner._data_loader_iter = iter([batch()])
    assert next(runner._data_loader_iter).batch_size() == 4
    with pytest.raises(StopIteration):
        runner.next_batch()


def test_write_metrics_is_libais_static_method_with_a_prefix():
    from libai.utils.events import EventStorage

    with EventStorage(0) as storage:
        TrainerBase.write_metrics({"lm_loss": flow.tensor(1.5), "sop_loss": flow.tensor(0.5),
                                   "acc": flow.tensor(9.0)}, 0.25, prefix="train_")
        latest = {k: float(v) for k, (v, _) in storage.latest().items()}
    assert latest == {"data_time": 0.25, "train_total_loss": 2.0, "lm_loss": 1.5, "sop_loss": 0.5}


def test_call_run_step_passes_as_many_arguments_as_run_step_takes():
    from types import SimpleNamespace

    from libai.engine.trainer import call_run_step

    seen = []
    signatures = {
        "none": lambda: seen.append(()),
        "get_batch": lambda get_batch: seen.append((get_batch,)),
        "both": lambda get_batch, device="cuda": seen.append((get_batch, device)),
        "varargs": lambda *args: seen.append(args),
    }
    for run_step in signatures.values():  # an attribute function: no ``self`` to skip
        call_run_step(SimpleNamespace(run_step=run_step), len, "cpu")
    assert seen == [(), (len,), (len, "cpu"), (len, "cpu")]
