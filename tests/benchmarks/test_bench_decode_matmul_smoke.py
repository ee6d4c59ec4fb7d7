"""benchmarks/bench_decode_matmul.py runs end to end without torch (``HF_ENV`` unset): every
product of a decoding step is timed in OneFlow (2-D and 3-D input) and NumPy, agrees with
NumPy to float32 rounding, and the step totals and the hand-off cost are printed."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "benchmarks", "bench_decode_matmul.py")


def test_quick_run_prints_every_product_and_the_step_totals():
    env = {k: v for k, v in os.environ.items() if k != "HF_ENV"}
    proc = subprocess.run([sys.executable, SCRIPT, "--quick"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "HF_ENV not set: no torch column" in out
    for name in ("query_key_value [96x32]", "attention dense [32x32]", "dense_h_to_4h [128x32]",
                 "dense_4h_to_h [32x128]", "LM head [256x32]"):
        rows = [line for line in out.splitlines() if line.startswith(name)]
        assert len(rows) == 2, (name, out)  # --quick: 1 and 2 rows
        # the last column: OneFlow's product against NumPy's, float32 rounding at most
        assert all(float(row.split()[-1]) < 1e-4 for row in rows), rows
    assert len(re.findall(r"^one decoding step \(1 layers \+ head\)", out, re.M)) == 2
    assert re.search(r"the op followed by \.numpy\(\) \d+ us of CPU per call", out)
