"""libai picks OpenBLAS kernels for the processor at ``import libai``, before OneFlow loads,
and never overrides the user's ``OPENBLAS_CORETYPE``. Checked in fresh subprocesses (the
variable is read once, when OneFlow's OpenBLAS loads), with what OneFlow's OpenBLAS then really
uses read back from the library. The same probes check the route of OneFlow's matrix products
to NumPy's OpenBLAS (``LIBAI_CBLAS_ROUTE``), whose C adapter is also called directly here."""
import ctypes
import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from libai import _blas, _runtime
from libai._runtime import BLAS_CHOSEN_VARIABLE, BLAS_VARIABLE, coretype_for, read_cpu_flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """
import json, os
import libai
from libai._runtime import (blas_choice, check_blas_kernels, gemv_products, matrix_route,
                            openblas_core_in_use)
import numpy as np
import oneflow as flow
from libai.utils.logger import collect_env_info
table = collect_env_info().splitlines()
row = [l for l in table if l.startswith("OPENBLAS_CORETYPE")]
route_row = [l for l in table if l.startswith("CPU matrix products")]
# one-row and one-column products in every layout OneFlow's matmul offers, and a batched one
rng = np.random.default_rng(1)
worst, before = 0.0, gemv_products()
for shape_a, shape_b in (((1, 33), (33, 20)), ((20, 33), (33, 1)), ((4, 1, 16), (4, 16, 9))):
    for ta in (False, True):
        for tb in (False, True):
            a = rng.standard_normal(shape_a).astype(np.float32)
            b = rng.standard_normal(shape_b).astype(np.float32)
            a_in = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if ta else a
            b_in = np.ascontiguousarray(np.swapaxes(b, -1, -2)) if tb else b
            if a.ndim == 3:
                if ta or tb:
                    continue
                out = flow.bmm(flow.tensor(a_in), flow.tensor(b_in)).numpy()
            else:
                out = flow.matmul(flow.tensor(a_in), flow.tensor(b_in), transpose_a=ta,
                                  transpose_b=tb).numpy()
            ref = a.astype(np.float64) @ b.astype(np.float64)
            worst = max(worst, float(np.abs(out - ref).max() / np.abs(ref).max()))
gemv = gemv_products() - before
print("PROBE " + json.dumps(dict(env=os.environ.get("OPENBLAS_CORETYPE"), choice=blas_choice(),
      core=openblas_core_in_use(), error=check_blas_kernels(), row=row, route=matrix_route(),
      route_row=route_row, vector_error=worst, gemv=gemv)))
"""

# Started by a process that imported libai: a launched rank or a tool run from a libai script.
CHILD = """
import subprocess, sys
import libai
out = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True, text=True)
print(out.stdout)
"""


def run_probe(env_changes, parent=False):
    env = {k: v for k, v in os.environ.items() if k not in (BLAS_VARIABLE, BLAS_CHOSEN_VARIABLE)}
    env.update(env_changes)
    env["PYTHONPATH"] = REPO
    cmd = [sys.executable, "-c", CHILD, PROBE] if parent else [sys.executable, "-c", PROBE]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PROBE ")]
    assert proc.returncode == 0 and lines, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(lines[-1][len("PROBE "):])


def expected_core():
    return coretype_for(*read_cpu_flags())


def test_without_a_user_value_libai_chooses_from_the_cpu_flags_and_oneflow_uses_it():
    want = expected_core()
    result = run_probe({})
    assert result["env"] == want
    assert result["choice"]["source"] == ("libai" if want else "none")
    if want in ("Zen", "Haswell"):  # families OneFlow 0.9's OpenBLAS has under those names
        assert result["core"] == want.upper()
    assert result["error"] < 1e-4
    assert len(result["row"]) == 1 and (want or "unset") in result["row"][0]
    assert "matmul agrees with NumPy" in result["row"][0]
    # OneFlow's products run on NumPy's OpenBLAS, one-row/one-column ones as GEMV: 8 matmuls
    # and 4 batch entries of the bmm take that path, and all agree with NumPy
    assert result["route"]["active"] == "yes", result["route"]
    assert len(result["route_row"]) == 1 and result["route"]["reason"] in result["route_row"][0]
    assert "GEMV" in result["route_row"][0]
    assert result["gemv"] == 12
    assert result["vector_error"] < 1e-5


def test_a_user_value_is_kept_and_reported_as_the_users():
    # with the route off, OneFlow's own OpenBLAS computes, on the kernels the user named
    result = run_probe({BLAS_VARIABLE: "Sandybridge", _blas.ROUTE_VARIABLE: "0"})
    assert result["env"] == "Sandybridge"
    assert result["choice"]["source"] == "user"
    assert result["core"] == "SANDYBRIDGE"
    assert "Sandybridge (user" in result["row"][0]
    assert result["error"] < 1e-4
    assert result["route"]["active"] == "no" and "LIBAI_CBLAS_ROUTE=0" in result["route_row"][0]
    assert result["gemv"] == 0 and result["vector_error"] < 1e-5


def test_the_route_is_refused_once_oneflow_is_loaded(monkeypatch):
    monkeypatch.setattr(_blas, "_adapter", None)
    choice = _blas.route_matrix_products({})
    assert choice["active"] == "no" and "imported before libai" in choice["reason"]
    off = _blas.route_matrix_products({_blas.ROUTE_VARIABLE: "0"})
    assert off["active"] == "no" and "LIBAI_CBLAS_ROUTE=0" in off["reason"]


def test_the_route_goes_to_scipy_openblas32_on_one_thread_and_says_when_it_is_missing(monkeypatch):
    target = _blas._route_target()
    assert target is not None and "scipy_openblas32" in target._name
    get_threads = _blas._route_symbol(target, "openblas_get_num_threads")
    assert get_threads() == 1  # one thread per product, as OneFlow's own OpenBLAS
    monkeypatch.setattr(_blas.importlib.util, "find_spec", lambda name: None)
    assert _blas._route_target() is None
    monkeypatch.setattr(_blas, "_adapter", None)
    monkeypatch.delitem(sys.modules, "oneflow")  # as if OneFlow were not loaded yet
    choice = _blas.route_matrix_products({})
    assert choice["active"] == "no" and "pip install scipy-openblas32" in choice["reason"]


ROW_MAJOR, COL_MAJOR, NO_TRANS, TRANS = 101, 102, 111, 112


def call_adapter_sgemm(order, trans_a, trans_b, a, b, c, alpha, beta):
    """C = alpha op(A) op(B) + beta C through the adapter's exported ``cblas_sgemm``, arrays
    laid out as ``order`` says (their leading dimension is their row or column stride)."""
    (path,) = glob.glob(os.path.join(os.path.dirname(_blas.__file__), _blas._ADAPTER_PATTERN))
    lib = ctypes.CDLL(path)
    sgemm = lib.cblas_sgemm
    sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int,
                                           ctypes.c_void_p, ctypes.c_int, ctypes.c_float,
                                           ctypes.c_void_p, ctypes.c_int]

    def stored(x):  # the stored array and its leading dimension
        y = x if order == ROW_MAJOR else x.T
        return y, y.strides[0] // 4

    m, n = c.shape
    k = a.shape[1] if trans_a == NO_TRANS else a.shape[0]
    (sa, lda), (sb, ldb), (sc, ldc) = stored(a), stored(b), stored(c)
    sgemm(order, trans_a, trans_b, m, n, k, alpha, sa.ctypes.data, lda, sb.ctypes.data, ldb,
          beta, sc.ctypes.data, ldc)
    return sc if order == ROW_MAJOR else sc.T


def padded(rows, cols, rng, order):
    """A float32 matrix inside a larger buffer, so its leading dimension exceeds its width."""
    if order == ROW_MAJOR:
        return rng.standard_normal((rows, cols + 3)).astype(np.float32)[:, :cols]
    return rng.standard_normal((cols, rows + 3)).astype(np.float32)[:, :rows].T


@pytest.mark.parametrize("order", [ROW_MAJOR, COL_MAJOR])
@pytest.mark.parametrize("m, n, k", [(1, 7, 5), (6, 1, 5), (1, 1, 5), (4, 6, 5)])
def test_the_adapter_computes_gemm_in_every_layout(order, m, n, k):
    if _blas.matrix_route().get("active") != "yes":
        pytest.fail(f"the cblas route is off in the test process: {_blas.matrix_route()}")
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    for trans_a in (NO_TRANS, TRANS):
        for trans_b in (NO_TRANS, TRANS):
            for alpha, beta in ((1.0, 0.0), (2.0, 0.5)):
                a = padded(*((m, k) if trans_a == NO_TRANS else (k, m)), rng, order)
                b = padded(*((k, n) if trans_b == NO_TRANS else (n, k)), rng, order)
                c = padded(m, n, rng, order)
                if beta == 0.0:
                    c[...] = np.nan  # GEMM's contract: C is not read when beta is 0
                start = c.astype(np.float64)
                op_a = a.T if trans_a == TRANS else a
                op_b = b.T if trans_b == TRANS else b
                want = alpha * (op_a.astype(np.float64) @ op_b.astype(np.float64))
                if beta:
                    want += beta * start
                got = call_adapter_sgemm(order, trans_a, trans_b, a, b, c, alpha, beta)
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5,
                                           err_msg=f"order {order} trans {trans_a},{trans_b} "
                                                   f"alpha {alpha} beta {beta}")


def test_an_empty_user_value_leaves_the_choice_to_openblas():
    result = run_probe({BLAS_VARIABLE: ""})
    assert result["env"] == ""
    assert result["choice"]["source"] == "user"


def test_processes_started_by_a_libai_process_inherit_the_choice_as_libais():
    want = expected_core()
    if want is None:
        pytest.skip("libai chooses nothing for this processor, so there is nothing to inherit")
    result = run_probe({}, parent=True)
    assert result["env"] == want
    assert result["choice"]["source"] == "libai"
    assert "inherited" in result["choice"]["reason"]


@pytest.mark.parametrize("vendor,flags,expected", [
    ("GenuineIntel", "fpu sse2 avx avx2 fma avx512f avx512bw avx512vl avx512dq", "SkylakeX"),
    ("AuthenticAMD", "fpu sse2 avx avx2 fma avx512f avx512bw avx512vl avx512dq", "SkylakeX"),
    ("AuthenticAMD", "fpu sse2 avx avx2 fma", "Zen"),
    ("GenuineIntel", "fpu sse2 avx avx2 fma", "Haswell"),
    ("GenuineIntel", "fpu sse2 avx avx2", None),  # AVX2 without FMA: leave it to OpenBLAS
    ("GenuineIntel", "fpu sse2 avx", None),
])
def test_core_type_from_cpuinfo(tmp_path, vendor, flags, expected):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nvendor_id\t: {vendor}\nflags\t\t: {flags}\n\n"
                       f"processor\t: 1\nvendor_id\t: {vendor}\nflags\t\t: {flags}\n")
    env = {}
    choice = _blas.choose_blas_kernels(env, cpuinfo_path=str(cpuinfo))
    assert env.get(BLAS_VARIABLE) == expected
    assert choice["source"] == ("libai" if expected else "none")
    user = {BLAS_VARIABLE: "Nehalem"}
    assert _blas.choose_blas_kernels(user, cpuinfo_path=str(cpuinfo))["source"] == "user"
    assert user[BLAS_VARIABLE] == "Nehalem"


def test_unreadable_cpuinfo_chooses_nothing(tmp_path):
    env = {}
    assert _blas.choose_blas_kernels(env, cpuinfo_path=str(tmp_path / "missing"))["source"] == "none"
    assert BLAS_VARIABLE not in env


def test_the_start_up_check_names_the_variable_when_oneflow_computes_something_else(monkeypatch):
    import oneflow as flow

    real = flow.matmul
    monkeypatch.setattr(flow, "matmul", lambda a, b: real(a, b) * 1.01)
    with pytest.raises(RuntimeError, match="OPENBLAS_CORETYPE"):
        _blas.check_blas_kernels()


CPU_CHOICES = [(_runtime.VM_THREAD_VARIABLE, _runtime.choose_vm_threading),
               (_runtime.ONEDNN_VARIABLE, _runtime.choose_cpu_elementwise_kernels)]
VM_PROBE = ("import os, libai, oneflow; "
            + "; ".join(f"print('VM', os.environ.get({variable!r}, 'unset'))" for variable, _ in CPU_CHOICES))


@pytest.mark.parametrize("variable, choose", CPU_CHOICES)
@pytest.mark.parametrize("user, has_gpu, expected", [(None, False, "0"), (None, True, None), ("1", False, "1")])
def test_cpu_choices_are_made_without_a_gpu_and_never_over_the_users_value(variable, choose, user, has_gpu,
                                                                           expected):
    env = {} if user is None else {variable: user}
    choice = choose(env, has_gpu=has_gpu)
    assert env.get(variable) == expected
    assert choice["value"] == (expected or "")


def test_a_process_that_imports_libai_runs_with_the_choice_and_keeps_a_user_value():
    variables = [variable for variable, _ in CPU_CHOICES]
    base = {k: v for k, v in os.environ.items() if k not in variables}
    base["PYTHONPATH"] = REPO
    seen = []
    for extra in ({}, {variable: "1" for variable in variables}):
        out = subprocess.run([sys.executable, "-c", VM_PROBE], env={**base, **extra},
                             capture_output=True, text=True, timeout=300)
        seen.append([line for line in out.stdout.splitlines() if line.startswith("VM ")])
    expected_default = "unset" if _runtime._has_nvidia_device() else "0"
    assert seen == [[f"VM {expected_default}"] * len(variables), ["VM 1"] * len(variables)]


@pytest.mark.parametrize("value, enabled", [(None, True), ("1", True), ("0", False), ("false", False),
                                            (" False ", False), ("true", True)])
def test_the_onednn_reading_follows_oneflows(value, enabled):
    env = {} if value is None else {_runtime.ONEDNN_VARIABLE: value}
    assert _runtime.onednn_elementwise_enabled(env) is enabled


POOL_PROBE = """
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("blas_alone", sys.argv[1])
blas = importlib.util.module_from_spec(spec)
spec.loader.exec_module(blas)  # libai/_blas.py alone: no NumPy, no other OpenBLAS loaded
before = len(os.listdir("/proc/self/task"))
target = blas._route_target()
after = len(os.listdir("/proc/self/task"))
print(json.dumps({"before": before, "after": after, "env": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "threads": blas._route_symbol(target, "openblas_get_num_threads")()}))
"""


@pytest.mark.parametrize("user_value", [None, "3"])
def test_the_routed_openblas_starts_no_thread_pool_and_keeps_the_users_variable(user_value):
    """Loading scipy-openblas32 starts no pool threads (each would busy-wait ~0.1 s for work
    it never gets), whatever the user set, and OPENBLAS_NUM_THREADS is as the user left it."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("NUM_THREADS")}
    if user_value is not None:
        env["OPENBLAS_NUM_THREADS"] = user_value
    proc = subprocess.run([sys.executable, "-c", POOL_PROBE, _blas.__file__], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["after"] == result["before"], result
    assert result["env"] == user_value and result["threads"] == 1
