"""The MNIST project through DefaultTrainer and tools/train_net.py, on real digits."""
import os
import shutil

import numpy as np
import pytest

from libai.config import LazyConfig
from libai.engine import DefaultTrainer

from lr_reference import warmup_cosine_lrs
from mnist_helpers import MNIST_CONFIG, load_mnist_cfg, quick_overrides, read_metrics, run_train_net
from toy import LossRecorder


def _train(cfg, resume=False, hooks=()):
    trainer = DefaultTrainer(cfg)
    trainer.register_hooks(list(hooks), after="LRScheduler")
    trainer.resume_or_load(resume=resume)
    return trainer, trainer.train()


def test_resume_reproduces_the_uninterrupted_run(digits_dir, tmp_path):
    """Stop after the checkpoint at iteration 4 (simulated by copying it into a fresh output
    dir), resume, and compare the raw loss of every iteration from the first resumed one (5) on.
    The raw values, recorded by a hook, are what a missing piece of state shows in at once:
    without the RNG state the dropout masks of iteration 5 differ; without the sampler position
    the batch does; without the optimizer or scheduler state the update does. (metrics.json
    holds medians over a window, which hide a single differing iteration.)"""
    full_dir, resumed_dir = str(tmp_path / "full"), str(tmp_path / "resumed")
    warmup = {"train.warmup_ratio": 0.25}  # 3 warmup iterations of 12: both pieces of the schedule
    full_raw, resumed_raw = {}, {}
    trainer, _ = _train(load_mnist_cfg(digits_dir, full_dir, **warmup), hooks=[LossRecorder.make(full_raw)])
    assert trainer.cfg.model.dropout > 0, "the resume test needs dropout (random state) to prove RNG restore"
    full = [m for m in read_metrics(os.path.join(full_dir, "metrics.json")) if "total_loss" in m]
    assert [m["iteration"] for m in full] == list(range(12)) == sorted(full_raw)
    # the scheduler was stepped every iteration, on the formula's schedule
    expected_lr = warmup_cosine_lrs(base=2e-3, max_iter=12, warmup_iter=3)
    np.testing.assert_allclose([m["lr"] for m in full], expected_lr, rtol=1e-6)

    os.makedirs(resumed_dir)
    shutil.copytree(os.path.join(full_dir, "model_0000004"), os.path.join(resumed_dir, "model_0000004"))
    with open(os.path.join(resumed_dir, "last_checkpoint"), "w") as f:
        f.write("model_0000004")
    trainer, _ = _train(load_mnist_cfg(digits_dir, resumed_dir, **warmup), resume=True,
                        hooks=[LossRecorder.make(resumed_raw)])
    assert trainer.start_iter == 5
    assert trainer.consumed_train_samples == 12 * 16
    assert sorted(resumed_raw) == list(range(5, 12))
    for it in range(5, 12):
        assert resumed_raw[it] == full_raw[it], f"iteration {it}: (loss, lr) resumed {resumed_raw[it]} != {full_raw[it]}"
    resumed = [m for m in read_metrics(os.path.join(resumed_dir, "metrics.json")) if "total_loss" in m]
    assert [m["iteration"] for m in resumed] == list(range(5, 12))
    np.testing.assert_allclose([m["lr"] for m in resumed], expected_lr[5:], rtol=1e-6)


def test_resume_without_a_checkpoint_starts_fresh_and_after_final_reports_done(digits_dir, tmp_path, caplog):
    out = str(tmp_path / "run")
    caplog.set_level("INFO", logger="libai")
    trainer, results = _train(load_mnist_cfg(digits_dir, out, **{"train.train_iter": 6}), resume=True)
    assert "no checkpoint in" in caplog.text and "starting from scratch" in caplog.text
    assert trainer.iter == 6 and "Acc@1" in results
    caplog.clear()
    again, results = _train(load_mnist_cfg(digits_dir, out, **{"train.train_iter": 6}), resume=True)
    assert results == {} and "Training is already complete" in caplog.text
    assert again.start_iter == 6


def test_command_line_run_writes_every_file_and_eval_only_agrees(digits_dir, tmp_path):
    out = str(tmp_path / "cli")
    proc = run_train_net(["--config-file", MNIST_CONFIG, *quick_overrides(digits_dir, out)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("log.txt", "config.yaml", "metrics.json", "last_checkpoint", "model_0000004",
                 "model_0000009", "model_final", "model_best"):
        assert os.path.exists(os.path.join(out, name)), name
    with open(os.path.join(out, "last_checkpoint")) as f:
        assert f.read().strip() == "model_final"

    metrics = read_metrics(os.path.join(out, "metrics.json"))
    train_lines = [m for m in metrics if "total_loss" in m]
    for key in ("iteration", "total_loss", "losses", "lr", "time", "data_time", "throughput"):
        assert key in train_lines[-1], key
    evals = [m for m in metrics if "Acc@1" in m]
    assert [m["iteration"] for m in evals] == [5, 11]

    reloaded = LazyConfig.load(os.path.join(out, "config.yaml"))
    assert reloaded.train.train_iter == 12 and reloaded.train.output_dir == out
    assert reloaded.model._target_.endswith("MNISTClassifier")

    proc = run_train_net(["--config-file", os.path.join(out, "config.yaml"), "--eval-only",
                          f"train.load_weight={os.path.join(out, 'model_final')}"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = [l for l in (proc.stdout + proc.stderr).splitlines() if l.startswith("copypaste: ") and "Acc@1" not in l][-1]
    acc1 = float(line.split(": ")[1].split(",")[0])
    assert acc1 == pytest.approx(evals[-1]["Acc@1"], abs=1e-4)


def test_eval_only_without_weights_says_what_to_pass(digits_dir, tmp_path):
    out = str(tmp_path / "empty")
    proc = run_train_net(["--config-file", MNIST_CONFIG, "--eval-only", *quick_overrides(digits_dir, out)])
    assert proc.returncode != 0
    assert "--eval-only needs trained weights" in proc.stderr and "train.load_weight" in proc.stderr


def test_help_explains_the_options():
    proc = run_train_net(["--help"], timeout=120)
    assert proc.returncode == 0
    for flag in ("--config-file", "--resume", "--eval-only", "--fast-dev-run"):
        assert flag in proc.stdout
