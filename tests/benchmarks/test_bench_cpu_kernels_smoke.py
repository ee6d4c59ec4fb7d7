"""benchmarks/bench_cpu_kernels.py runs end to end: every op row and step row is printed with
numbers, each ratio is the ratio of the two figures printed beside it, and both settings gave the
same loss. No timing is asserted."""
import os
import re
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO_ROOT, "benchmarks", "bench_cpu_kernels.py")
NUMBER = r"([0-9]+\.[0-9]+)"
OPS = ("logits - row max", "x * per-token scale", "x > 0, bool out", "bias add", "same-shape add",
       "add of 3 (add_n)", "scores + key bias", "causal masked_fill", "softmax")


def _consistent(ratio: float, on: float, off: float, step: float = 5e-4) -> bool:
    """``ratio`` (2 decimals) can be on / off computed before ``on`` and ``off`` were rounded to
    3 decimals."""
    low, high = (on - step) / (off + step), (on + step) / max(off - step, 1e-9)
    return low - 0.005 <= ratio <= high + 0.005


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_quick_run_prints_every_op_and_the_eager_step_with_ratios():
    # The Graph step is the same code path with libai's GraphBase; its compile would double the
    # test's time, so the smoke test runs the ops and the Eager step.
    proc = _run("--quick", "--parts", "ops,eager", "--iters", "1", "--warmup", "1", "--repeats", "1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "ONEFLOW_ENABLE_ONEDNN_OPTS=1 (oneDNN) against =0" in out and "load average" in out
    for op in OPS:
        match = re.search(rf"^{re.escape(op)} \[.*\]\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$", out, re.M)
        assert match, (op, out)
        on, off, ratio = map(float, match.groups())
        assert on > 0 and off > 0
        assert _consistent(ratio, on, off), (op, on, off, ratio)
    step = re.search(rf"^eager\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
                     out, re.M)
    assert step, out
    cpu_on, cpu_off, cpu_ratio, wall_on, wall_off, wall_ratio = map(float, step.groups())
    assert _consistent(cpu_ratio, cpu_on, cpu_off) and _consistent(wall_ratio, wall_on, wall_off)
    loss = re.search(r"^eager: first-step loss ([0-9.]+), largest difference between the settings "
                     r"([0-9.e+-]+)$", out, re.M)
    assert loss, out
    assert float(loss.group(2)) < 1e-5  # the kernels change the speed, not the result
    assert not re.search(r"^graph\s", out, re.M)


def test_unknown_part_is_refused_by_name():
    bad = _run("--parts", "ops,nosuch", timeout=60)
    assert bad.returncode == 2
    assert "--parts: unknown part(s) ['nosuch']; choose from ops, eager, graph" in bad.stderr
