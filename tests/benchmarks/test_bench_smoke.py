"""benchmarks/bench_trainer_overhead.py runs end to end and reports what docs/benchmarks.md shows.

No timing is asserted: only that both loops ran, and that the printed ratio is the ratio of the
printed throughputs.
"""
import os
import re
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO_ROOT, "benchmarks", "bench_trainer_overhead.py")
NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


def _run(*args, timeout=240):
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=timeout)


def _means(section: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)}:\s+mean\s+{NUMBER}", section, re.M)
    assert match, f"no '{name}: mean ...' line in:\n{section}"
    return float(match.group(1))


def test_tiny_run_prints_both_throughputs_their_ratio_and_the_hook_breakdown():
    proc = _run("--iters", "5", "--repeats", "1", "--chunk", "2", "--warmup", "1", "--hidden", "32",
                "--batch-size", "32", "--log-period", "2", "--breakdown")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "OMP_NUM_THREADS=1" in out
    for label in ("wall time", "CPU time"):
        section = out.split(f"[{label}]", 1)[1].split("\n\n", 1)[0]
        hand = _means(section, "hand-written loop")
        ours = _means(section, "DefaultTrainer")
        assert hand > 0 and ours > 0
        ratio = re.search(rf"ratio DefaultTrainer / hand-written \({label}\): {NUMBER}", section)
        assert ratio, section
        # The ratio printed is the ratio of the two means printed (3 decimals, rounded means).
        assert float(ratio.group(1)) == pytest.approx(ours / hand, abs=2e-3)
        assert "median of per-repeat ratios" in section and "best run / best run" in section
    rows = re.findall(rf"^\s+1\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s", out, re.M)
    assert len(rows) == 1, out
    a, b, r = map(float, rows[0])
    assert r == pytest.approx(b / a, abs=2e-3)
    breakdown = out.split("DefaultTrainer breakdown", 1)[1]
    for part in ("step (data, forward, backward, update)", "IterationTimer.after_step",
                 "LRScheduler.after_step", "PeriodicCheckpointer.after_step", "PeriodicWriter.after_step"):
        assert re.search(rf"{re.escape(part)}\s+-?{NUMBER} ms/iter", breakdown), (part, breakdown)
    assert "EvalHook" not in breakdown  # evaluation is off in the benchmark


def test_help_and_bad_arguments():
    help_proc = _run("--help", timeout=60)
    assert help_proc.returncode == 0
    for flag in ("--iters", "--repeats", "--chunk", "--warmup", "--threads", "--breakdown"):
        assert flag in help_proc.stdout
    bad = _run("--iters", "0", timeout=60)
    assert bad.returncode == 2
    assert "--iters must be >= 1, got 0" in bad.stderr
