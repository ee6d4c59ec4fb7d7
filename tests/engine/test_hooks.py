"""Behaviour of individual hooks with a fake trainer or clock."""
import pytest

from libai.engine import hooks
from libai.engine.trainer import TrainerBase


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class SlowSteps(TrainerBase):
    """Each step 'takes' 1 s of Python time and the 5th also waits 5 s for queued work."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock

    def run_step(self):
        self.clock.now += 1.0 + (5.0 if self.iter == 4 else 0.0)


def test_iteration_time_averages_over_the_window_so_delayed_waits_count():
    clock = Clock()
    trainer = SlowSteps(clock)
    trainer.register_hooks([hooks.IterationTimer(warmup_iter=0, window=10, clock=clock)])
    trainer.train(0, 10)
    times = [v for v, _ in trainer.storage.history("time").values()]
    assert times[0] == pytest.approx(1.0)
    assert times[4] == pytest.approx(10.0 / 5)  # 5 iterations, 10 s in all
    assert times[-1] == pytest.approx(15.0 / 10)  # the window holds every second spent


class FakeCheckpointer:
    def __init__(self):
        self.saved = []

    def save(self, name, tag_last_checkpoint=True, **extra):
        self.saved.append(name)

    def keep_last(self, n, prefix="model_"):
        return []


class StopWithoutSaving(hooks.HookBase):
    def after_step(self):
        if self.trainer.iter == 2:
            self.trainer.request_stop("broken weights", save_checkpoint=False)


class Nothing(TrainerBase):
    def run_step(self):
        pass


def test_a_stop_that_must_not_save_is_not_saved_even_on_a_save_iteration():
    ckpt = FakeCheckpointer()
    trainer = Nothing()
    trainer.register_hooks([StopWithoutSaving(), hooks.PeriodicCheckpointer(ckpt, period=3)])
    trainer.train(0, 10)
    assert ckpt.saved == []


def test_a_clean_early_stop_is_saved_under_its_last_iteration():
    class Stop(hooks.HookBase):
        def after_step(self):
            if self.trainer.iter == 4:
                self.trainer.request_stop("enough")

    ckpt = FakeCheckpointer()
    trainer = Nothing()
    trainer.register_hooks([Stop(), hooks.PeriodicCheckpointer(ckpt, period=3)])
    trainer.train(0, 10)
    assert ckpt.saved == ["model_0000002", "model_0000004"]


def test_the_nan_check_runs_on_its_period_and_before_every_checkpoint():
    checked = []

    class Probe(hooks.NaNLossHook):
        def _check_losses(self):
            checked.append(self.trainer.iter + 1)

    ckpt = FakeCheckpointer()
    trainer = Nothing()
    trainer.register_hooks([Probe(period=10), hooks.PeriodicCheckpointer(ckpt, period=4)])
    trainer.train(0, 22)
    assert checked == [4, 8, 10, 12, 16, 20, 22]
