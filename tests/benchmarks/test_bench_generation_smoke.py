"""benchmarks/bench_generation.py runs end to end (``--quick``): both modes produce the same
tokens and the printed ratio is the ratio of the printed rates. No timing is asserted."""
import os
import re
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUM = r"([0-9]+(?:\.[0-9]+)?)"


def test_quick_run_prints_both_rates_and_their_ratio():
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "benchmarks", "bench_generation.py"),
                           "--quick"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    wall = {}  # the first table is the wall-clock one
    for m in re.finditer(rf"^(cache|no-cache)\s+{NUM}\s+{NUM}\s+{NUM}$", out, re.M):
        wall.setdefault(m.group(1), float(m.group(2)))
    assert set(wall) == {"cache", "no-cache"}, out
    ratio = float(re.search(rf"cache / no cache \(wall\): median {NUM}x", out).group(1))
    assert abs(ratio - wall["cache"] / wall["no-cache"]) < 0.011, out
    assert "identical tokens: yes" in out
