"""benchmarks/bench_zoo.py runs end to end: one row per model asked for, the ratio column is the
ratio of the two throughput columns, and the JSON holds the same numbers. No timing asserted."""
import json
import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO_ROOT, "benchmarks", "bench_zoo.py")


def test_two_models_one_step_each(tmp_path):
    out = tmp_path / "zoo.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--models", "gpt", "vit", "--warmup", "1",
                           "--iters", "2", "--batch-size", "4", "--json", str(out)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(out.read_text())
    assert sorted(results) == ["gpt", "vit"]
    for name, row in results.items():
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(name + " "))
        cells = line.split()
        eager, graph = row["eager"]["samples_per_s"], row["graph"]["samples_per_s"]
        assert f"{eager:.1f}" in cells and f"{graph:.1f}" in cells
        assert f"{graph / eager:.2f}" in cells
        assert row["eager"]["parameters"] == row["graph"]["parameters"] > 0
    bad = subprocess.run([sys.executable, SCRIPT, "--models", "nosuch"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "unknown models ['nosuch']" in bad.stderr
