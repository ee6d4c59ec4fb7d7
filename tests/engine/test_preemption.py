"""SIGTERM mid-run: the step finishes, a checkpoint is saved, the process exits 0, and
--resume continues from that checkpoint."""
import os
import signal
import subprocess
import sys
import time

from mnist_helpers import MNIST_CONFIG, REPO, quick_overrides


def test_sigterm_saves_a_checkpoint_and_exits_cleanly(digits_dir, tmp_path):
    out = str(tmp_path / "run")
    args = quick_overrides(digits_dir, out, **{"train.train_iter": 100000,
                                                "train.checkpointer.period": 100000,
                                                "train.evaluation.enabled": False,
                                                "train.warmup_ratio": 0.0})
    cmd = [sys.executable, os.path.join(REPO, "tools", "train_net.py"), "--config-file", MNIST_CONFIG, *args]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.time() + 240
    try:
        for line in proc.stdout:
            lines.append(line)
            if "iter: 3/" in line:
                proc.send_signal(signal.SIGTERM)
                break
            assert time.time() < deadline, "training did not start in time:\n" + "".join(lines)
        rest, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    output = "".join(lines) + rest
    assert proc.returncode == 0, output[-3000:]
    assert "received SIGTERM" in output
    with open(os.path.join(out, "last_checkpoint")) as f:
        name = f.read().strip()
    assert name.startswith("model_") and name != "model_final"
    stopped_at = int(name.split("_")[1])
    assert 3 <= stopped_at < 100000

    resumed = subprocess.run([cmd[0], cmd[1], "--resume", *cmd[2:], "train.train_iter=%d" % (stopped_at + 3)],
                             cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    text = resumed.stdout + resumed.stderr
    assert f"next iteration {stopped_at + 1}" in text, [l for l in text.splitlines() if "esum" in l]
