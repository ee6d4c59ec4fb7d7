"""benchmarks/bench_tokenizer_speed.py runs end to end: both paths, their ratio, same ids."""
import os
import re
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_tiny_run_prints_both_rates_their_ratio_and_identical_outputs():
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "benchmarks", "bench_tokenizer_speed.py"),
                           "--mb", "0.03", "--vocab-size", "600", "--rounds", "1", "--max-docs", "5"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    match = re.search(r"gpt2 round 1: python ([\d,]+) tokens/s, tokenizers ([\d,]+) tokens/s, ratio ([\d.]+)",
                      proc.stdout)
    assert match, proc.stdout
    python, fast, ratio = (float(g.replace(",", "")) for g in match.groups())
    assert abs(fast / python - ratio) < 0.01
    assert "gpt2 outputs byte-identical (same ids): True" in proc.stdout
    assert "bert outputs byte-identical (same ids): True" in proc.stdout
