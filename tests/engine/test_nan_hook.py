"""NaNLossHook and the OptimizerStep's non-finite check: "stop" ends training at the NaN
iteration without saving it; "skip" leaves the weights of a NaN step unchanged and goes on;
"skip" is refused in Graph mode."""
import math
import os
import re

import numpy as np
import oneflow as flow
import pytest

from libai.config import LazyCall
from libai.engine import DefaultTrainer, TrainingFailed
from libai.engine.hooks.nan_check import NaNLossHook
from libai.engine.support import check_nan_action
from libai.engine.trainer import HookBase, TrainerBase

from toy import ToyModel, toy_cfg

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class PoisonableModel(ToyModel):
    """ToyModel whose logits are multiplied by a buffer; a test sets it to NaN for a step.

    A buffer (not a Python flag) so that a compiled graph sees the change too.
    """

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("poison", flow.ones(1))

    def forward(self, inputs, labels=None):
        logits = self.net(inputs) * self.poison
        if self.training and labels is not None:
            return {"losses": self.loss_func(logits, labels)}
        return {"prediction_scores": logits}


class PoisonAt(HookBase):
    """Makes the loss NaN at the given iterations; records the weights after each step."""

    def __init__(self, iterations) -> None:
        self.iterations = set(iterations)
        self.weights = []

    def before_step(self):
        if self.trainer.iter in self.iterations:
            with flow.no_grad():
                self.trainer.model.poison.fill_(float("nan"))

    def after_step(self):
        with flow.no_grad():
            self.trainer.model.poison.fill_(1.0)
        self.weights.append({n: p.numpy().copy() for n, p in self.trainer.model.named_parameters()})


def make_trainer(out_dir, nan_hook, poison_at, graph=False, train_iter=8, period=2):
    cfg = toy_cfg(str(out_dir), model=LazyCall(PoisonableModel)(), train_iter=train_iter,
                  checkpointer=dict(period=period, max_to_keep=10), evaluation=dict(enabled=False),
                  nan_check=dict(enabled=False))  # the test registers its own hook
    cfg.graph.enabled = graph
    trainer = DefaultTrainer(cfg)
    poison = PoisonAt(poison_at)
    trainer.register_hooks([nan_hook], before="PeriodicCheckpointer")
    trainer.register_hooks([poison])
    trainer.resume_or_load(resume=False)
    return trainer, poison


def last_checkpoint(out_dir):
    with open(os.path.join(str(out_dir), "last_checkpoint")) as f:
        return f.read().strip()


def load_weights(out_dir, name):
    state = flow.load(os.path.join(str(out_dir), name, "model"))
    return {k: v.numpy() for k, v in state.items()}


def all_weights_finite(weights):
    return all(np.isfinite(v).all() for v in weights.values())


# ---------------------------------------------------------------------------------- stop
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_stop_ends_training_at_the_nan_iteration_and_keeps_the_last_good_checkpoint(tmp_path, graph):
    # Iteration 3 is also a checkpoint iteration (period 2): it must not be saved.
    trainer, _ = make_trainer(tmp_path, NaNLossHook(action="stop"), poison_at=[3], graph=graph)
    with pytest.raises(TrainingFailed) as failure:
        trainer.train()
    good = os.path.join(str(tmp_path), "model_0000001")
    assert str(failure.value).endswith(
        f"The newest checkpoint, {good}, is the last good one: resume from it with --resume after "
        "lowering the learning rate or checking the data.")
    assert trainer.iter == 4  # iterations 0..3 ran, then training stopped
    assert re.search(r"the loss is nan at iteration 3\b.*without saving", trainer.stop_reason)
    assert last_checkpoint(tmp_path) == "model_0000001"
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith("model_")) == ["model_0000001"]
    saved = load_weights(tmp_path, "model_0000001")
    assert all_weights_finite(saved)
    restored = PoisonableModel()
    restored.load_state_dict(flow.load(os.path.join(str(tmp_path), "model_0000001", "model")))
    assert all(np.isfinite(p.numpy()).all() for p in restored.parameters())


def test_stop_names_the_first_nan_when_checking_every_few_steps(tmp_path):
    # Eager: the NaN step at 1 corrupts the weights; the check at iteration 2 (period 3) looks at
    # the losses of iterations 0, 1 and 2 and names the first bad one.
    trainer, poison = make_trainer(tmp_path, NaNLossHook(action="stop", period=3), poison_at=[1],
                                   period=100)
    with pytest.raises(TrainingFailed) as failure:
        trainer.train()
    # No checkpoint was saved before the NaN: the message must not promise one to resume from.
    assert str(failure.value) == (
        "Training failed: the loss is nan at iteration 1. Training stops without saving the weights "
        f"of this or any later iteration. No checkpoint was saved in {tmp_path} before this, so "
        "there is nothing to resume from: start again after lowering the learning rate or checking "
        "the data.")
    assert trainer.iter == 3
    assert "the loss is nan at iteration 1." in trainer.stop_reason
    assert not all_weights_finite(poison.weights[-1])  # the broken weights never reached disk
    assert not os.path.exists(os.path.join(str(tmp_path), "last_checkpoint"))


def test_a_finite_run_is_not_stopped(tmp_path):
    trainer, _ = make_trainer(tmp_path, NaNLossHook(action="stop"), poison_at=[], train_iter=4)
    trainer.train()
    assert trainer.stop_reason is None and trainer.iter == 4
    assert last_checkpoint(tmp_path) == "model_final"


# ---------------------------------------------------------------------------------- skip
def test_skip_leaves_the_weights_of_a_nan_step_unchanged_and_training_continues(tmp_path):
    hook = NaNLossHook(action="skip")
    trainer, poison = make_trainer(tmp_path, hook, poison_at=[2], train_iter=6)
    trainer.train()
    assert trainer.stop_reason is None and trainer.iter == 6
    after = poison.weights
    for name in after[1]:
        np.testing.assert_array_equal(after[2][name], after[1][name], err_msg=name)
        assert not np.array_equal(after[3][name], after[2][name]), name
    assert all(all_weights_finite(w) for w in after)
    assert trainer.optimizer_step.nonfinite_steps == 1 and hook.consecutive_skips == 0
    assert math.isnan(trainer.storage.history("total_loss").values()[2][0])
    assert last_checkpoint(tmp_path) == "model_final"
    assert all_weights_finite(load_weights(tmp_path, "model_final"))


def test_skip_stops_after_too_many_skips_in_a_row_and_saves_the_unchanged_weights(tmp_path):
    hook = NaNLossHook(action="skip", max_consecutive_skips=2)
    trainer, poison = make_trainer(tmp_path, hook, poison_at=range(1, 8), train_iter=8, period=100)
    with pytest.raises(TrainingFailed, match=r"steps in a row .* newest checkpoint, .*model_0000002, is the last good"):
        trainer.train()
    assert trainer.iter == 3
    assert "2 steps in a row up to iteration 2" in trainer.stop_reason
    assert last_checkpoint(tmp_path) == "model_0000002"
    saved = load_weights(tmp_path, "model_0000002")
    for name, value in poison.weights[0].items():
        np.testing.assert_array_equal(saved[name], value, err_msg=name)


def test_skip_is_refused_in_graph_mode_before_any_step(tmp_path):
    with pytest.raises(ValueError, match=r"'skip' needs Eager mode.*graph.enabled=True with "
                                         r"nan_check.action='stop', or graph.enabled=False"):
        NaNLossHook(action="skip", graph_enabled=True)
    trainer, poison = make_trainer(tmp_path, NaNLossHook(action="skip"), poison_at=[], graph=True)
    with pytest.raises(ValueError, match="'skip' needs Eager mode"):
        trainer.train()
    assert poison.weights == []


# ---------------------------------------------------------------------------------- misc
def test_bad_settings_are_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"action must be one of \('stop', 'skip'\), got 'ignore'"):
        NaNLossHook(action="ignore")
    with pytest.raises(ValueError, match="period must be >= 1, got 0"):
        NaNLossHook(period=0)
    check_nan_action("stop", graph_enabled=True)  # the supported graph combination


def test_from_config_reads_train_nan_check():
    assert NaNLossHook.from_config({"enabled": False, "action": "stop"}, graph_enabled=False) is None
    hook = NaNLossHook.from_config({"enabled": True, "action": "skip", "period": 4}, graph_enabled=False)
    assert (hook.action, hook.period) == ("skip", 4)
    with pytest.raises(ValueError, match="needs Eager mode"):
        NaNLossHook.from_config({"enabled": True, "action": "skip"}, graph_enabled=True)


class SilentTrainer(TrainerBase):
    def run_step(self):
        pass


def test_a_step_runner_that_puts_no_total_loss_is_explained():
    trainer = SilentTrainer()
    trainer.register_hooks([NaNLossHook()])
    with pytest.raises(RuntimeError, match="no 'total_loss' in the event storage at iteration 0.*put_scalar"):
        trainer.train(0, 2)


# ---------------------------------------------------------------------------------- OptimizerStep
def _tiny_step(skip_nonfinite):
    from libai.engine.optimizer_step import OptimizerStep

    flow.manual_seed(0)
    model = flow.nn.Linear(3, 1)
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, OptimizerStep(opt, skip_nonfinite=skip_nonfinite)


@pytest.mark.parametrize("make_loss", [
    lambda model, x: (model(x) * float("nan")).sum(),  # NaN gradients
    lambda model, x: model(x).sum() + float("inf"),  # a non-finite loss with finite gradients
], ids=["nan-gradients", "inf-loss"])
def test_optimizer_step_skips_a_non_finite_update(make_loss):
    model, step = _tiny_step(skip_nonfinite=True)
    before = [p.numpy().copy() for p in model.parameters()]
    step.backward(make_loss(model, flow.ones(2, 3)))
    assert step.step() is False
    assert step.nonfinite_steps == 1
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)
        assert p.grad is None or not p.grad.numpy().any()
    step.backward(model(flow.ones(2, 3)).sum())
    assert step.step() is True
    assert not np.array_equal(model.weight.numpy(), before[0])
    assert step.state_dict()["nonfinite_steps"] == 1


def test_optimizer_step_without_the_option_applies_the_update():
    model, step = _tiny_step(skip_nonfinite=False)
    step.backward((model(flow.ones(2, 3)) * float("nan")).sum())
    assert step.step() is True
    assert np.isnan(model.weight.numpy()).all()


def test_all_finite_over_local_and_global_tensors():
    from libai.engine.optimizer_step import all_finite

    placement = flow.placement("cpu", ranks=[0])
    good = flow.ones(4, 2).to_global(placement=placement, sbp=flow.sbp.split(0))
    bad = flow.tensor([1.0, float("inf")]).to_global(placement=placement, sbp=flow.sbp.broadcast)
    assert all_finite([flow.ones(3), good])
    assert not all_finite([flow.ones(3), good, bad])
    assert not all_finite([flow.tensor([float("nan")])])


TWO_RANK_SCRIPT = '''
import libai
import oneflow as flow
from libai.engine.optimizer_step import all_finite
from libai.utils import distributed as dist

both = flow.placement("cpu", ranks=[0, 1])
split = flow.ones(4, 2).to_global(placement=both, sbp=flow.sbp.broadcast).to_global(sbp=flow.sbp.split(0))
stage = flow.tensor([1.0, 2.0]).to_global(placement=flow.placement("cpu", ranks=[1]), sbp=flow.sbp.broadcast)
shard = flow.ones(2, 2)
if dist.get_rank() == 1:
    shard[1, 1] = float("nan")
poisoned = shard.to_global(placement=both, sbp=flow.sbp.split(0))  # only rank 1 holds the NaN
print(f"RESULT rank={dist.get_rank()} clean={all_finite([split, stage])} "
      f"poisoned={all_finite([split, poisoned, stage])}")
'''


def test_all_finite_gives_every_rank_the_same_answer(tmp_path):
    # A NaN in one rank's shard must make every rank skip, or the ranks' weights would diverge.
    from libai.utils.testing import launch, tagged_lines

    script = tmp_path / "all_finite_two_ranks.py"
    script.write_text(TWO_RANK_SCRIPT)
    proc = launch(str(script), 2, timeout=240, env={"PYTHONPATH": REPO_ROOT})
    assert proc.returncode == 0, proc.stdout[-3000:]
    lines = tagged_lines(proc.stdout, ranks=2)
    assert lines == [f"RESULT rank={r} clean=True poisoned=False" for r in (0, 1)], proc.stdout[-3000:]
