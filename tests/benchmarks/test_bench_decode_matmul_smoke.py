"""benchmarks/bench_decode_matmul.py runs end to end without torch (``HF_ENV`` unset): OneFlow
runs in two children, one on libai's BLAS route and one with ``LIBAI_CBLAS_ROUTE=0``; every
product of a decoding step is timed in both (2-D and 3-D input) and in NumPy, the route child's
one-row products take the GEMV path, both children agree with NumPy to float32 rounding, and
the step totals, the training-size products, the "own / route" ratios and the hand-off cost
are printed. No timing is asserted."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "benchmarks", "bench_decode_matmul.py")
RATIO = r"(\d+\.\d\dx|n/a)"


def _table(out: str, first_header: str) -> list:
    """The header and body rows (split on runs of spaces) of the table starting with ``first_header``."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header))
    body = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        body.append(re.split(r"\s{2,}", line.strip()))
    return [re.split(r"\s{2,}", lines[start].strip())] + body


def test_quick_run_compares_the_route_with_oneflows_own_sgemm():
    # the route child must get the route even when the caller's environment turns it off
    env = {k: v for k, v in os.environ.items() if k != "HF_ENV"}
    env["LIBAI_CBLAS_ROUTE"] = "0"
    proc = subprocess.run([sys.executable, SCRIPT, "--quick"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "HF_ENV not set: no torch column" in out
    assert re.search(r"^OneFlow's BLAS, route \(libai's default\): scipy-openblas32's OpenBLAS",
                     out, re.M), out
    assert re.search(r"^OneFlow's BLAS, own: LIBAI_CBLAS_ROUTE=0: OneFlow's own sgemm",
                     out, re.M), out

    decode = _table(out, "product  ")
    assert decode[0] == ["product", "rows", "route 2-D", "route 3-D", "own 2-D", "own 3-D",
                         "numpy", "own / route", "route GEMV", "max |oneflow - numpy|"]
    for name in ("query_key_value [96x32]", "attention dense [32x32]", "dense_h_to_4h [128x32]",
                 "dense_4h_to_h [32x128]", "LM head [256x32]"):
        rows = {int(r[1]): r for r in decode[1:] if r[0].startswith(name)}
        assert sorted(rows) == [1, 2], (name, out)  # --quick: 1 and 2 rows
        for r in rows.values():
            assert all(float(x) >= 0 for x in r[2:7]), r
            assert re.fullmatch(RATIO, r[7]), r
            # OneFlow's product (both children) against NumPy's: float32 rounding at most
            assert float(r[9]) < 1e-4, r
        # the route child's one-row products (2-D and 3-D) took the GEMV path, two rows did not
        assert int(rows[1][8]) == 2 and int(rows[2][8]) == 0, (rows, out)
    steps = [r for r in decode[1:] if r[0] == "one decoding step (1 layers + head)"]
    assert [int(r[1]) for r in steps] == [1, 2] and all(re.fullmatch(RATIO, r[7]) for r in steps)

    large = _table(out.split("training-size products", 1)[1], "product  ")
    assert large[0] == ["product", "route", "own", "numpy", "own / route",
                        "max |oneflow - numpy|"]
    assert [r[0] for r in large[1:]] == [
        "query_key_value [16x32] -> 96", "dense_h_to_4h [16x32] -> 128",
        "dense_4h_to_h [16x128] -> 32", "LM head [16x32] -> 256", "cube [64x64] -> 64"]
    for r in large[1:]:
        assert all(re.fullmatch(r"\d+\.\d|n/a", x) for x in r[1:4]), r  # GFLOP/s
        assert re.fullmatch(RATIO, r[4]) and float(r[5]) < 1e-4, r

    assert re.search(rf"^OneFlow own / route, same run: one decoding step {RATIO} at 1 row, "
                     rf"{RATIO} at 2 rows; training-size products ({RATIO}, ){{4}}{RATIO}$",
                     out, re.M), out
    assert re.search(r"the op followed by \.numpy\(\) \d+ us of CPU per call", out)
