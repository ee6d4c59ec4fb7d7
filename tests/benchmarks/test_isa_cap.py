"""benchmarks/_isa.py: ``--isa avx2`` caps both sides of a comparison at AVX2, with libai's
OpenBLAS kernels chosen by libai's own rule for an AVX2-only processor of the same vendor."""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import _isa  # noqa: E402

AVX512 = "fpu sse2 avx avx2 fma avx512f avx512bw avx512cd avx512dq avx512vl"


def _cpuinfo(tmp_path, vendor, flags):
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nvendor_id\t: {vendor}\nflags\t\t: {flags}\n\n")
    return str(path)


@pytest.mark.parametrize("vendor, coretype", [("AuthenticAMD", "Zen"), ("GenuineIntel", "Haswell")])
def test_avx2_cap_names_the_avx2_kernels_of_the_vendor_and_caps_torch(tmp_path, vendor, coretype):
    env = _isa.isa_environment("avx2", _cpuinfo(tmp_path, vendor, AVX512))
    assert env == {"OPENBLAS_CORETYPE": coretype, "ONEDNN_MAX_CPU_ISA": "AVX2",
                   "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def test_native_changes_nothing_and_a_processor_without_avx2_is_refused(tmp_path, monkeypatch):
    assert _isa.isa_environment("native") == {}
    with pytest.raises(SystemExit, match="no AVX2"):
        _isa.isa_environment("avx2", _cpuinfo(tmp_path, "GenuineIntel", "fpu sse2 avx"))
    with pytest.raises(ValueError, match="native, avx2"):
        _isa.isa_environment("avx512")


def test_apply_sets_the_variables_for_the_children_and_says_so(monkeypatch):
    for key in ("OPENBLAS_CORETYPE", "ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(_isa, "isa_environment", lambda isa: {"ATEN_CPU_CAPABILITY": "avx2"})
    line = _isa.apply_isa("avx2")
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx2" and "ATEN_CPU_CAPABILITY=avx2" in line
