"""A one-process DefaultTrainer run whose iteration ``argv[2]`` sleeps ``argv[3]`` seconds in
its training step (a stand-in for a hung collective); used by test_watchdog.py. With a sleep of
0 it is a normal run."""
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from toy import toy_cfg  # noqa: E402

from libai.engine import DefaultTrainer  # noqa: E402
from libai.engine.trainer import HookBase  # noqa: E402


class SleepAt(HookBase):
    def __init__(self, iteration, seconds):
        self.iteration, self.seconds = iteration, seconds

    def before_step(self):
        if self.trainer.iter == self.iteration and self.seconds:
            time.sleep(self.seconds)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    cfg = toy_cfg(sys.argv[1], train_iter=12, checkpointer=dict(period=100, max_to_keep=1),
                  evaluation=dict(enabled=False), model_summary=dict(enabled=False))
    trainer = DefaultTrainer(cfg)
    trainer.register_hooks([SleepAt(int(sys.argv[2]), float(sys.argv[3]))])
    trainer.train()
    print("TRAINING DONE")
