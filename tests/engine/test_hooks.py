"""Behaviour of individual hooks with a fake trainer or clock."""
import pytest

from libai.engine import hooks
from libai.engine.trainer import TrainerBase


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class QueuedDevice:
    """A fake asynchronous device: a step's Python code takes 0.1 s of the clock and queues
    ``work`` seconds of compute, which only passes on the clock when someone waits for it
    (as OneFlow's eager and graph work does)."""

    def __init__(self, clock):
        self.clock = clock
        self.pending = 0.0
        self.waits = 0

    def wait(self):
        self.waits += 1
        self.clock.now += self.pending
        self.pending = 0.0


class QueuedSteps(TrainerBase):
    def __init__(self, clock, device, work):
        super().__init__()
        self.clock, self.device, self.work = clock, device, work

    def run_step(self):
        self.clock.now += 0.1
        self.device.pending += self.work(self.iter)


def test_iteration_time_counts_queued_work_once_per_period(caplog):
    clock = Clock()
    device = QueuedDevice(clock)
    # 1 s of queued work per step, and the 12th step (iteration 11) queues 5 s more.
    trainer = QueuedSteps(clock, device, lambda it: 1.0 + (5.0 if it == 11 else 0.0))
    trainer.register_hooks([hooks.IterationTimer(warmup_iter=2, period=5, clock=clock,
                                                 wait=device.wait)])
    with caplog.at_level("INFO", logger="libai.engine.hooks.iteration_timer"):
        trainer.train(0, 17)
    history = trainer.storage.history("time")
    # One value per period (iterations 4, 9, 14) and one for the last iteration (16): each the
    # wall time since the previous measured point over the iterations in between.
    assert [it for _, it in history.values()] == [4, 9, 14, 16]
    assert [v for v, _ in history.values()] == pytest.approx([1.1, 1.1, (5 * 1.1 + 5) / 5, 1.1])
    # Waits: before training, end of warm-up, 4 measured points, and once at the very end.
    assert device.waits == 7
    # Steady state: iterations 2..16 (15 of them) in 15 * 1.1 + 5 s.
    speed = [r.getMessage() for r in caplog.records if "Overall training speed" in r.getMessage()]
    assert len(speed) == 1 and "15 iterations" in speed[0]
    assert f"({(15 * 1.1 + 5) / 15:.4f} s / it)" in speed[0]


def test_iteration_time_after_an_early_stop_still_counts_the_queued_tail(caplog):
    clock = Clock()
    device = QueuedDevice(clock)
    trainer = QueuedSteps(clock, device, lambda it: 1.0)

    class StopAt7(hooks.HookBase):
        def after_step(self):
            if self.trainer.iter == 7:
                self.trainer.request_stop("enough")

    trainer.register_hooks([hooks.IterationTimer(warmup_iter=0, period=5, clock=clock,
                                                 wait=device.wait), StopAt7()])
    with caplog.at_level("INFO", logger="libai.engine.hooks.iteration_timer"):
        trainer.train(0, 20)
    speed = [r.getMessage() for r in caplog.records if "Overall training speed" in r.getMessage()]
    assert len(speed) == 1 and "8 iterations" in speed[0] and "(1.1000 s / it)" in speed[0]


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
