"""benchmarks/bench_global_tensors.py runs end to end (``--quick``): each child checks that its
parameters really are local or global tensors, and the table's ratio is the ratio of the printed
throughputs. No timing is asserted."""
import os
import re
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO_ROOT, "benchmarks", "bench_global_tensors.py")


def test_quick_run_compares_local_and_global_tensors_in_both_modes():
    proc = subprocess.run([sys.executable, SCRIPT, "--quick"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("mode "))
    headers = re.split(r"\s{2,}", lines[start].strip())
    rows = {}
    for line in lines[start + 2:start + 4]:
        cells = dict(zip(headers, re.split(r"\s{2,}", line.strip())))
        rows[cells["mode"]] = cells
    assert set(rows) == {"eager", "graph"}
    for mode, cells in rows.items():
        local, glob = float(cells["local samples/s"]), float(cells["global samples/s"])
        ratio = float(cells["global/local (per round)"].split()[0])
        assert abs(ratio - glob / local) <= 0.002 + 0.01 * ratio, (mode, cells)
