"""The MNIST quickstart model with three test probes, for launched runs of tools/train_net.py:

- ``loss_log``: every rank appends the raw (not smoothed) total loss of each training step to
  ``<loss_log>.rank<r>`` — what a resumed run is compared with, iteration for iteration;
- ``fail_on_rank`` / ``fail_at_step``: that rank raises at that training step (counted from 0
  in this process), *after* the ranks have already exchanged gradients in the earlier steps;
- ``kill_on_rank`` / ``kill_at_step`` / ``kill_marker``: that rank SIGKILLs itself at that step
  (counted from 0 in this process) unless the file ``kill_marker`` exists, which it creates
  first: a rank lost once (the OOM killer, a bad node), whose restart then trains on;
- ``step_seconds``: each training step sleeps this long, so that a signal sent at a known
  iteration arrives well before the run would end on its own;
- ``mode_log``: at its first training forward every rank writes ``graph`` to
  ``<mode_log>.rank<r>`` when it is being traced into a static graph (lazy tensors), ``eager``
  otherwise: the proof that Graph mode really compiled the model, which equal losses are not.
  (In Graph mode ``forward`` runs once, at tracing: the other probes apply to Eager runs.)

Everything else is ``MNISTClassifier``: the probes change no number.
"""
import os
import signal
import time
from typing import Dict, Optional

import oneflow as flow

from libai.utils import distributed as dist
from projects.MNIST.modeling.model import MNISTClassifier


class ProbeMNIST(MNISTClassifier):
    """:class:`MNISTClassifier` plus the probes the module docstring lists."""

    def __init__(self, loss_log: str = "", fail_on_rank: int = -1, fail_at_step: int = -1,
                 step_seconds: float = 0.0, mode_log: str = "", kill_on_rank: int = -1,
                 kill_at_step: int = -1, kill_marker: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.mode_log = mode_log
        self.loss_log = loss_log
        self.fail_on_rank = fail_on_rank
        self.fail_at_step = fail_at_step
        self.step_seconds = step_seconds
        self.kill = (kill_on_rank, kill_at_step, kill_marker)
        self.steps = 0

    def forward(self, inputs: flow.Tensor, labels: Optional[flow.Tensor] = None) -> Dict[str, flow.Tensor]:
        # not super(): in Graph mode `self` is the graph's proxy of this module, not an instance
        out = MNISTClassifier.forward(self, inputs, labels)
        if not (self.training and labels is not None):
            return out
        rank = dist.get_rank()
        if self.mode_log and self.steps == 0:
            with open(f"{self.mode_log}.rank{rank}", "a") as f:
                f.write("graph\n" if inputs.is_lazy else "eager\n")
        if inputs.is_lazy:
            self.steps += 1
            return out
        if rank == self.fail_on_rank and self.steps == self.fail_at_step:
            raise RuntimeError(f"deliberate failure on rank {rank} at step {self.steps}")
        if (rank, self.steps) == self.kill[:2] and not os.path.exists(self.kill[2]):
            open(self.kill[2], "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        if self.loss_log:
            loss = out["losses"]
            if loss.is_global:
                loss = loss.to_global(sbp=flow.sbp.broadcast).to_local()
            with open(f"{self.loss_log}.rank{rank}", "a") as f:
                f.write(f"{float(loss.numpy()):.9g}\n")
        if self.step_seconds:
            time.sleep(self.step_seconds)
        self.steps += 1
        return out
