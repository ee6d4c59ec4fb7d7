"""A failing DataLoader worker ends iteration (and training) with its error within seconds.

Three failures, each in one of two workers: ``__getitem__`` raises; the worker process is killed
(SIGKILL, what the OOM killer sends); the worker's batch cannot be sent to the main process
(pickling fails as when /dev/shm is full), which without libai's queue made the loader wait
forever. An alarm turns a hang into a test failure instead of a stuck suite.
"""
import os
import signal
import sys
import time

import oneflow as flow
import pytest
from oneflow.utils.data import Dataset

from libai.data.build import build_image_test_loader, build_nlp_train_loader
from libai.data.structures import DistTensorData, Instance

HANG_LIMIT = 20  # seconds


class CannotPickle:
    """Stands for a batch that cannot be written to shared memory."""

    def __reduce__(self):
        raise OSError(28, "No space left on device (writing the batch to /dev/shm)")


class FailingInWorker(Dataset):
    """Worker 1 fails in the chosen way; worker 0 and the main process serve normally."""

    def __init__(self, mode, n=64):
        self.mode, self.n = mode, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = flow.utils.data.get_worker_info()
        failing = info is not None and info.id == 1
        if failing and self.mode == "raise":
            raise ValueError(f"sample {i} is corrupt")
        if failing and self.mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        extra = CannotPickle() if failing and self.mode == "unsendable" else 0
        return Instance(inputs=DistTensorData(flow.tensor([float(i)])), extra=extra)


@pytest.fixture
def no_hang():
    def on_alarm(signum, frame):
        raise TimeoutError(f"the loader hung for {HANG_LIMIT}s instead of raising the worker's error")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(HANG_LIMIT)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


EXPECTED = {
    "raise": (ValueError, r"Caught ValueError in DataLoader worker process 1\.(.|\n)*sample \d+ is corrupt"),
    "kill": (RuntimeError, r"a DataLoader worker died: worker 1 \(pid \d+\) was killed by SIGKILL\. "
                           r"SIGKILL usually means the machine ran out of memory"),
    "unsendable": (OSError, r"Caught OSError in DataLoader worker process 1 while sending its batch to the "
                            r"main process \(pickling the batch failed(.|\n)*No space left on device"),
}


@pytest.mark.parametrize("mode", ["raise", "kill", "unsendable"])
def test_train_loader_raises_the_workers_error(no_hang, mode):
    loader, _, _ = build_nlp_train_loader(FailingInWorker(mode), train_batch_size=4, num_workers=2)
    start = time.monotonic()
    error, pattern = EXPECTED[mode]
    batches = iter(loader)
    with pytest.raises(error, match=pattern):
        for _ in range(40):  # more than one epoch: the sampler is endless
            next(batches)
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("mode", ["kill", "unsendable"])
def test_test_loader_raises_the_workers_error(no_hang, mode):
    loader = build_image_test_loader(FailingInWorker(mode), test_batch_size=4, num_workers=2)
    error, pattern = EXPECTED[mode]
    with pytest.raises(error, match=pattern):
        for _ in loader:  # (not list(loader): OneFlow 0.9 turns that raise into a SystemError)
            pass


def test_training_exits_with_the_workers_error(no_hang, tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engine"))
    from toy import toy_cfg

    from libai.config import LazyCall
    from libai.engine import DefaultTrainer

    cfg = toy_cfg(str(tmp_path / "out"))
    cfg.dataloader.train.dataset = [LazyCall(UnsendableToy)()]
    cfg.dataloader.train.num_workers = 2
    with pytest.raises(OSError, match="while sending its batch to the main process"):
        DefaultTrainer(cfg).train()


class UnsendableToy(Dataset):
    """The toy model's samples (field ``inputs``, ``labels``) with worker 1's batch unsendable."""

    def __init__(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engine"))
        from toy import ToyDataset

        self.inner = ToyDataset(n=64)

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        sample = self.inner[i]
        info = flow.utils.data.get_worker_info()
        if info is not None and info.id == 1:
            sample.set("unsendable", CannotPickle())
        return sample
