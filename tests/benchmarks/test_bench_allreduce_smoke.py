"""benchmarks/bench_allreduce.py runs its two-rank launch end to end at the --quick size and
reports the all-reduce of exactly the gradients of the model it names."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "benchmarks")
sys.path.insert(0, BENCH)


def test_two_ranks_all_reduce_every_gradient_of_the_quick_gpt():
    import bench_allreduce

    sizes = bench_allreduce.gradient_sizes(quick=True)
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "bench_allreduce.py"), "--quick"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    head = re.search(r"all-reduce of ([\d,]+) float32 gradients .* in (\d+) parameters", proc.stdout)
    assert head, proc.stdout
    assert int(head.group(1).replace(",", "")) == sum(sizes) and int(head.group(2)) == len(sizes)
    for kind in ("one buffer", "per parameter"):
        row = re.search(rf"^{kind}\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)$", proc.stdout, re.M)
        assert row and float(row.group(1)) > 0, (kind, proc.stdout)
