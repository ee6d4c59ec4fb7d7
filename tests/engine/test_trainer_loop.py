"""TrainerBase and hooks: event order, ordering by name, stopping, hook state."""
from typing import List

import pytest

from libai.engine.trainer import HookBase, TrainerBase, sum_losses


class Recorder(HookBase):
    def __init__(self, log: List[str], tag: str) -> None:
        self.log, self.tag = log, tag

    @property
    def name(self) -> str:
        return self.tag

    def before_train(self):
        self.log.append(f"{self.tag}.before_train")

    def before_step(self):
        self.log.append(f"{self.tag}.before_step{self.trainer.iter}")

    def after_backward(self):
        self.log.append(f"{self.tag}.after_backward{self.trainer.iter}")

    def after_step(self):
        self.log.append(f"{self.tag}.after_step{self.trainer.iter}")

    def after_train(self):
        self.log.append(f"{self.tag}.after_train{self.trainer.iter}")


class CountingTrainer(TrainerBase):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def run_step(self):
        self.log.append(f"step{self.iter}")
        self.after_backward()


def test_events_run_in_order_around_each_step():
    log: List[str] = []
    t = CountingTrainer(log)
    t.register_hooks([Recorder(log, "a")])
    t.train(2, 4)
    assert log == [
        "a.before_train",
        "a.before_step2", "step2", "a.after_backward2", "a.after_step2",
        "a.before_step3", "step3", "a.after_backward3", "a.after_step3",
        "a.after_train4",
    ]
    assert t.iter == 4


def test_hooks_are_placed_by_name():
    log: List[str] = []
    t = CountingTrainer(log)
    t.register_hooks([Recorder(log, "first"), Recorder(log, "last")])
    t.register_hooks([Recorder(log, "middle")], after="first")
    t.register_hooks([Recorder(log, "zero")], before="first")
    assert [h.name for h in t.hooks] == ["zero", "first", "middle", "last"]
    with pytest.raises(ValueError, match="no registered hook named 'nope'.*'zero', 'first'"):
        t.register_hooks([Recorder(log, "x")], after="nope")


def test_registering_a_non_hook_is_an_error():
    with pytest.raises(TypeError, match="not a HookBase"):
        CountingTrainer([]).register_hooks([object()])


class StopAt(HookBase):
    def __init__(self, at):
        self.at = at

    def after_step(self):
        if self.trainer.iter == self.at:
            self.trainer.request_stop("enough")


def test_a_hook_stops_training_cleanly_and_after_train_still_runs():
    log: List[str] = []
    t = CountingTrainer(log)
    t.register_hooks([StopAt(1), Recorder(log, "r")])
    t.train(0, 10)
    assert [x for x in log if x.startswith("step")] == ["step0", "step1"]
    assert log[-1] == "r.after_train2"
    assert t.stop_reason == "enough"


class Failing(TrainerBase):
    def run_step(self):
        raise RuntimeError("boom")


def test_after_train_runs_when_a_step_fails():
    log: List[str] = []
    t = Failing()
    t.register_hooks([Recorder(log, "r")])
    with pytest.raises(RuntimeError, match="boom"):
        t.train(0, 3)
    assert log[-1].startswith("r.after_train")


class Stateful(HookBase):
    def __init__(self):
        self.count = 0

    def after_step(self):
        self.count += 1

    def state_dict(self):
        return {"count": self.count}

    def load_state_dict(self, state):
        self.count = state["count"]


def test_trainer_state_carries_iteration_and_hook_state():
    t = CountingTrainer([])
    t.register_hooks([Stateful()])
    t.train(0, 3)
    state = t.state_dict()
    assert state["hooks"] == {"Stateful": {"count": 3}}
    t2 = CountingTrainer([])
    t2.register_hooks([Stateful()])
    t2.load_state_dict(state)
    assert t2.iter == state["iteration"] and t2.get_hook("Stateful").count == 3


def test_sum_losses_adds_every_loss_entry_and_rejects_outputs_without_one():
    import oneflow as flow

    total = sum_losses({"lm_loss": flow.tensor(1.5), "sop_loss": flow.tensor(0.25), "acc": flow.tensor(9.0)})
    assert float(total) == pytest.approx(1.75)
    with pytest.raises(ValueError, match=r"keys \['prediction_scores'\] but no loss"):
        sum_losses({"prediction_scores": flow.tensor(1.0)})
    with pytest.raises(TypeError, match="must return a dict"):
        sum_losses(flow.tensor(1.0))
