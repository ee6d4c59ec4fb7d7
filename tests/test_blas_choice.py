"""libai picks OpenBLAS kernels for the processor at ``import libai``, before OneFlow loads,
and never overrides the user's ``OPENBLAS_CORETYPE``. Checked in fresh subprocesses (the
variable is read once, when OneFlow's OpenBLAS loads), with what OneFlow's OpenBLAS then really
uses read back from the library."""
import json
import os
import subprocess
import sys

import pytest

from libai import _runtime
from libai._runtime import BLAS_CHOSEN_VARIABLE, BLAS_VARIABLE, coretype_for, read_cpu_flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """
import json, os
import libai
from libai._runtime import blas_choice, check_blas_kernels, openblas_core_in_use
import oneflow
from libai.utils.logger import collect_env_info
row = [l for l in collect_env_info().splitlines() if l.startswith("OPENBLAS_CORETYPE")]
print("PROBE " + json.dumps(dict(env=os.environ.get("OPENBLAS_CORETYPE"), choice=blas_choice(),
      core=openblas_core_in_use(), error=check_blas_kernels(), row=row)))
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


def test_a_user_value_is_kept_and_reported_as_the_users():
    result = run_probe({BLAS_VARIABLE: "Sandybridge"})
    assert result["env"] == "Sandybridge"
    assert result["choice"]["source"] == "user"
    assert result["core"] == "SANDYBRIDGE"
    assert "Sandybridge (user" in result["row"][0]
    assert result["error"] < 1e-4


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
    choice = _runtime.choose_blas_kernels(env, cpuinfo_path=str(cpuinfo))
    assert env.get(BLAS_VARIABLE) == expected
    assert choice["source"] == ("libai" if expected else "none")
    user = {BLAS_VARIABLE: "Nehalem"}
    assert _runtime.choose_blas_kernels(user, cpuinfo_path=str(cpuinfo))["source"] == "user"
    assert user[BLAS_VARIABLE] == "Nehalem"


def test_unreadable_cpuinfo_chooses_nothing(tmp_path):
    env = {}
    assert _runtime.choose_blas_kernels(env, cpuinfo_path=str(tmp_path / "missing"))["source"] == "none"
    assert BLAS_VARIABLE not in env


def test_the_start_up_check_names_the_variable_when_oneflow_computes_something_else(monkeypatch):
    import oneflow as flow

    real = flow.matmul
    monkeypatch.setattr(flow, "matmul", lambda a, b: real(a, b) * 1.01)
    with pytest.raises(RuntimeError, match="OPENBLAS_CORETYPE"):
        _runtime.check_blas_kernels()


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
