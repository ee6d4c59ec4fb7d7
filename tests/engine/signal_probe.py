"""Probes for the stop-signal tests (test_stop_signals.py): a run of the MNIST project whose
phases are slow enough, and announce themselves, so that a test can signal it in a known phase.

- :class:`SlowDigits`: MNIST digits whose ``__getitem__`` sleeps ``delay`` seconds and, at its
  first call in a process, writes that process's pid to ``<marker>.<pid>`` (the test sees that
  a loader worker of that dataset is fetching); with ``init_marker`` its constructor writes that
  file and sleeps ``init_seconds`` (the run is starting);
- :class:`SlowSaveMNIST`: the quickstart model whose ``state_dict()`` (called when a checkpoint
  is saved) writes ``save_marker`` and sleeps ``save_seconds`` on every rank.
"""
import os
import time
from typing import Any

from libai.data.datasets import MNISTDataset
from projects.MNIST.modeling.model import MNISTClassifier


class SlowDigits(MNISTDataset):
    def __init__(self, *args: Any, delay: float = 0.0, marker: str = "", init_marker: str = "",
                 init_seconds: float = 0.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.delay, self.marker = float(delay), marker
        if init_marker:  # the run is starting: building its datasets
            with open(init_marker, "w") as f:
                f.write(str(os.getpid()))
            time.sleep(float(init_seconds))

    def __getitem__(self, index: int) -> Any:
        if self.marker:
            path = f"{self.marker}.{os.getpid()}"
            if not os.path.exists(path):
                with open(path, "w") as f:
                    f.write(str(os.getpid()))
        if self.delay:
            time.sleep(self.delay)
        return super().__getitem__(index)


class SlowSaveMNIST(MNISTClassifier):
    def __init__(self, save_marker: str = "", save_seconds: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.save_marker, self.save_seconds = save_marker, float(save_seconds)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        if self.save_marker and not args and not kwargs:
            with open(self.save_marker, "a") as f:
                f.write(f"{os.getpid()}\n")
            time.sleep(self.save_seconds)
        return super().state_dict(*args, **kwargs)
