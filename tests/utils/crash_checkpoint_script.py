"""Run by test_checkpoint.py: save one checkpoint, then die by SIGKILL in the middle of the next.

The ``killer`` checkpointable comes after the model, so the second save has already written the
model part into its temporary directory when the process is killed: the state a power cut or an
OOM kill leaves behind.
"""
import os
import signal
import sys

import libai  # noqa: F401  (must precede oneflow)
import oneflow as flow

from libai.utils.checkpoint import Checkpointer


class KillOnSecondSave:
    def __init__(self):
        self.calls = 0

    def state_dict(self):
        self.calls += 1
        if self.calls == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = state["calls"]


if __name__ == "__main__":
    flow.manual_seed(0)
    model = flow.nn.Linear(3, 2)
    checkpointer = Checkpointer(model, sys.argv[1], killer=KillOnSecondSave())
    checkpointer.save("model_0000001", iteration=1)
    with flow.no_grad():
        model.weight.fill_(5.0)
    checkpointer.save("model_0000002", iteration=2)
    sys.exit("unreachable: the second save should have killed the process")
