"""``--isa avx2``: run both sides of a comparison as they would run on an AVX2-only x86 processor.

Issue 38, item 3: libai's processor-dependent choices (OpenBLAS's kernels, read from the CPU
flags by ``libai._blas.coretype_for``) and the peer's (torch's vectorised kernels, MKL's and
oneDNN's instruction sets) follow what the processor has, and the ratios between the two sides
move with it. Where only an AVX-512 machine is at hand, each library can be told to use no
more than AVX2, which is what it would pick on an AVX2-only processor of the same vendor:

* libai: ``OPENBLAS_CORETYPE`` set to what ``coretype_for`` gives for this processor's flags
  without AVX-512 (``Zen`` on AMD, ``Haswell`` elsewhere); ``ONEDNN_MAX_CPU_ISA=AVX2`` for the
  oneDNN bundled in OneFlow (used only where libai leaves oneDNN on);
* torch: ``ATEN_CPU_CAPABILITY=avx2`` (its own kernels), ``ONEDNN_MAX_CPU_ISA=AVX2`` and
  ``MKL_ENABLE_INSTRUCTIONS=AVX2`` (its products).

What this does not emulate: the other processor's caches, clock and memory bandwidth, and the
kernels OneFlow 0.9 compiled for one instruction set only (those run the same either way). It
is a measurement of the code paths, not of another machine; a result says which it was.
"""
import importlib.util
import os
from typing import Dict

ISA_CHOICES = ("native", "avx2")
_AVX512 = frozenset(("avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"))


def _libai_blas_module():
    """``libai/_blas.py`` loaded on its own: it imports nothing of libai or OneFlow, and the
    benchmark parent must not load OneFlow (the children set their threads first)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "libai", "_blas.py")
    spec = importlib.util.spec_from_file_location("_libai_blas_for_isa", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def isa_environment(isa: str, cpuinfo_path: str = "/proc/cpuinfo") -> Dict[str, str]:
    """The variables that make both sides use at most ``isa`` (``{}`` for ``native``)."""
    if isa == "native":
        return {}
    if isa != "avx2":
        raise ValueError(f"--isa must be one of {', '.join(ISA_CHOICES)}, got {isa!r}")
    blas = _libai_blas_module()
    vendor, flags = blas.read_cpu_flags(cpuinfo_path)
    if not {"avx2", "fma"} <= flags:
        raise SystemExit("--isa avx2: this processor has no AVX2/FMA, so there is nothing to emulate")
    coretype = blas.coretype_for(vendor, flags - _AVX512)
    return {"OPENBLAS_CORETYPE": coretype, "ONEDNN_MAX_CPU_ISA": "AVX2",
            "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def add_isa_argument(parser) -> None:
    parser.add_argument("--isa", choices=ISA_CHOICES, default="native",
                        help="native: each side uses what this processor has; avx2: both sides "
                             "capped at AVX2, as on an AVX2-only processor of this vendor "
                             "(see benchmarks/_isa.py for what that covers) (default: native)")


def apply_isa(isa: str) -> str:
    """Set ``isa``'s variables in this process's environment (children inherit them) and
    return one line for the report saying what was set."""
    env = isa_environment(isa)
    os.environ.update(env)
    if not env:
        return "instruction sets: native (each side uses what the processor has)"
    return "instruction sets: capped at AVX2 on both sides (" + ", ".join(
        f"{k}={v}" for k, v in env.items()) + ")"
