"""What users get from ``tools/train_net.py`` under ``oneflow.distributed.launch`` when a rank
fails or the job is preempted (2 data-parallel ranks, the MNIST quickstart with probes, see
probe_model.py):

- a rank that raises after the ranks have exchanged gradients ends the whole launch with its
  error, instead of leaving the other rank waiting in its next collective;
- SIGTERM sent to every rank stops all of them after the same iteration with one checkpoint,
  and ``--resume`` from it reproduces the uninterrupted run's raw per-iteration losses on every
  rank (bit for bit: same data order, weights, optimizer, schedule and random state).
"""
import os
import re
import signal
import subprocess
import sys

import pytest

from libai.utils.testing import child_pids, launch, start_launch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "engine"))
from mnist_helpers import REPO, quick_overrides  # noqa: E402

TRAIN_NET = os.path.join(REPO, "tools", "train_net.py")
PROBE_CONFIG = os.path.join(HERE, "probe_config.py")
ITERS = 30  # the preemption check runs every 10 iterations: a stop after 9 or 19 leaves some to resume


def _args(digits_dir, out, loss_log, **extra):
    return ["--config-file", PROBE_CONFIG, *quick_overrides(digits_dir, out, **{
        "train.train_micro_batch_size": 8, "train.evaluation.enabled": False,
        "train.checkpointer.period": 1000, "model.loss_log": loss_log, **extra})]


def _losses(loss_log, rank):
    with open(f"{loss_log}.rank{rank}") as f:
        return f.read().split()


def test_a_rank_failing_mid_training_ends_the_launch_with_its_error(digits_dir, tmp_path):
    log = str(tmp_path / "losses")
    try:  # a healthy failure ends in about 15 s on 2 cores
        proc = launch(TRAIN_NET, 2, _args(digits_dir, str(tmp_path / "run"), log,
                                          **{"model.fail_on_rank": 1, "model.fail_at_step": 3}),
                      timeout=90, cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail("the launch hung after rank 1 failed: the other rank waited in a collective")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "RuntimeError: deliberate failure on rank 1 at step 3" in proc.stdout, proc.stdout[-3000:]
    # steps 0-2 ran on both ranks (their gradients were all-reduced) before rank 1 failed
    assert len(_losses(log, 1)) == 3
    assert _losses(log, 0)[:3] == _losses(log, 1)


def test_sigterm_to_every_rank_stops_them_together_and_resume_matches_the_uninterrupted_run(
        digits_dir, tmp_path):
    full_log, cut_log, resumed_log = (str(tmp_path / name) for name in ("full", "cut", "resumed"))
    out = str(tmp_path / "preempted")
    # The uninterrupted run checkpoints every 10 iterations, where the preempted run can stop:
    # saving re-seeds OneFlow's generator (RNGState), so only runs that saved at the same
    # iterations draw the same dropout masks afterwards.
    full = launch(TRAIN_NET, 2, _args(digits_dir, str(tmp_path / "full_run"), full_log, **{
        "train.train_iter": ITERS, "train.checkpointer.period": 10}), timeout=200, cwd=REPO)
    assert full.returncode == 0, full.stdout[-3000:]

    proc = start_launch(TRAIN_NET, 2, _args(digits_dir, out, cut_log, **{
        "train.train_iter": ITERS, "model.step_seconds": 0.1}), cwd=REPO)
    lines, ranks = [], []
    try:
        for line in proc.stdout:
            lines.append(line)
            if "iter: 3/" in line:
                ranks = child_pids(proc.pid)
                for pid in ranks:
                    os.kill(pid, signal.SIGTERM)
                break
        rest, _ = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    output = "".join(lines) + rest
    assert len(ranks) == 2, f"expected the launcher's 2 ranks, found {ranks}:\n{output[-3000:]}"
    assert proc.returncode == 0, output[-3000:]
    assert "received SIGTERM" in output
    stopped = re.findall(r"Stopping training after iteration (\d+)", output)
    assert stopped and len(set(stopped)) == 1, stopped
    last = int(stopped[0])
    assert last in (9, 19), f"the ranks must agree at a check (every 10 iterations), stopped after {last}"
    # every rank ran the same iterations, and one checkpoint holds them
    assert len(_losses(cut_log, 0)) == len(_losses(cut_log, 1)) == last + 1
    assert sorted(n for n in os.listdir(out) if n.startswith("model_")) == [f"model_{last:07d}"]
    with open(os.path.join(out, "last_checkpoint")) as f:
        assert f.read().strip() == f"model_{last:07d}"

    resumed = launch(TRAIN_NET, 2, ["--resume", *_args(digits_dir, out, resumed_log, **{
        "train.train_iter": ITERS, "train.checkpointer.period": 10})],
                     timeout=200, cwd=REPO)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert f"next iteration {last + 1}" in resumed.stdout
    for rank in (0, 1):
        uninterrupted = _losses(full_log, rank)
        assert len(uninterrupted) == ITERS
        assert _losses(cut_log, rank) == uninterrupted[:last + 1], f"rank {rank} before the stop"
        assert _losses(resumed_log, rank) == uninterrupted[last + 1:], f"rank {rank} after resuming"
