"""Helpers for engine tests: tiny MNIST-format digits and a config of the MNIST project."""
import os
import subprocess
import sys

from libai.config import LazyConfig

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MNIST_CONFIG = os.path.join(REPO, "projects", "MNIST", "configs", "config.py")


def quick_overrides(digits_dir, output_dir, **extra):
    """Overrides that make the MNIST project a seconds-long run on the digits."""
    base = {
        "train.output_dir": output_dir,
        "dataloader.train.dataset.0.root": digits_dir,
        "dataloader.test.0.dataset.root": digits_dir,
        "train.train_epoch": 0,
        "train.train_iter": 12,
        "train.log_period": 1,
        "train.checkpointer.period": 5,
        "train.evaluation.eval_period": 6,
        "train.train_micro_batch_size": 16,
        "train.test_micro_batch_size": 64,
    }
    base.update(extra)
    return [f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in base.items()]


def load_mnist_cfg(digits_dir, output_dir, **extra):
    cfg = LazyConfig.load(MNIST_CONFIG)
    return LazyConfig.apply_overrides(cfg, quick_overrides(digits_dir, output_dir, **extra))


def run_train_net(args, cwd=REPO, timeout=300, **popen):
    """Run tools/train_net.py in a fresh process; returns CompletedProcess (text output)."""
    cmd = [sys.executable, os.path.join(REPO, "tools", "train_net.py"), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **popen)


def read_metrics(path):
    import json

    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
