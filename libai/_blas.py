"""Which BLAS OneFlow's CPU matrix products run on, chosen before the first ``import oneflow``.

Two questions, one per section: which OpenBLAS kernels suit this processor
(:func:`choose_blas_kernels`, the ``OPENBLAS_CORETYPE`` of OneFlow's bundled OpenBLAS, checked
against NumPy by :func:`check_blas_kernels`), and whether OneFlow's products go to a current
OpenBLAS instead, GEMV included (:func:`route_matrix_products`). ``libai/__init__.py`` calls
both through :mod:`libai._runtime`, which re-exports every public name here. This module
imports no other libai module, and OneFlow only inside :func:`check_blas_kernels`, which runs
once OneFlow is loaded.
"""
import ctypes
import glob
import importlib.util
import os
import sys
from typing import Any, Dict, FrozenSet, List, MutableMapping, Optional, Tuple


# ---------------------------------------------------------------------------------------------
# BLAS kernels for this processor
# ---------------------------------------------------------------------------------------------
BLAS_VARIABLE = "OPENBLAS_CORETYPE"
# Marks a value libai set, so that child processes do not mistake it for the user's.
BLAS_CHOSEN_VARIABLE = "LIBAI_OPENBLAS_CORETYPE_CHOSEN"

# What ``choose_blas_kernels`` decided in this process, for the environment table.
_blas_choice: Dict[str, str] = {}


def read_cpu_flags(cpuinfo_path: str = "/proc/cpuinfo") -> Tuple[str, FrozenSet[str]]:
    """The CPU vendor (``vendor_id``, e.g. ``AuthenticAMD``) and instruction-set flags of the
    first processor listed in ``cpuinfo_path``; ``("", frozenset())`` when it cannot be read
    (not Linux, or a sandbox without /proc)."""
    vendor, flags = "", frozenset()
    try:
        with open(cpuinfo_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "vendor_id" and not vendor:
                    vendor = value.strip()
                elif key == "flags" and not flags:
                    flags = frozenset(value.split())
                if vendor and flags:
                    break
    except OSError:
        pass
    return vendor, flags


def coretype_for(vendor: str, flags: FrozenSet[str]) -> Optional[str]:
    """The OpenBLAS core type whose kernels this processor runs best, from its flags.

    AVX-512 (F, BW, VL, DQ: what OpenBLAS's SkylakeX kernels use) gives ``SkylakeX``; AVX2
    with FMA gives ``Zen`` on AMD and ``Haswell`` elsewhere; anything older gives ``None``
    (OpenBLAS's own detection is left alone). OneFlow 0.9's bundled OpenBLAS predates some
    processors and, not recognising them, falls back to generic kernels at less than half the
    speed; naming the family explicitly avoids that.
    """
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Zen" if vendor == "AuthenticAMD" else "Haswell"
    return None


def choose_blas_kernels(environ: Optional[MutableMapping[str, str]] = None,
                        cpuinfo_path: str = "/proc/cpuinfo") -> Dict[str, str]:
    """Set ``OPENBLAS_CORETYPE`` for this processor before OneFlow (and its OpenBLAS) loads.

    A value already in the environment is the user's and is kept, whoever set it (an empty
    value, ``OPENBLAS_CORETYPE=``, is how to leave the choice to OpenBLAS). Otherwise
    the core type comes from the CPU flags (:func:`coretype_for`). Being in ``os.environ``, the
    choice is inherited by every process this one starts (launched ranks, data-loader workers,
    tools), and each of them also runs this at ``import libai``. Returns (and remembers, for
    the environment table) ``{"value", "source", "reason"}``; ``source`` is ``"user"``,
    ``"libai"``, ``"none"`` (no suitable type: OpenBLAS decides) or ``"too late"`` (OneFlow
    was imported before libai, so its OpenBLAS has already chosen).
    """
    env = os.environ if environ is None else environ
    vendor, flags = read_cpu_flags(cpuinfo_path)
    simd = " ".join(sorted(f for f in flags if f in ("avx2", "fma", "avx512f")))
    seen = f"{vendor or 'unknown vendor'}, {simd or 'no AVX2/FMA/AVX-512'}"
    if env.get(BLAS_VARIABLE) and env.get(BLAS_CHOSEN_VARIABLE) == env[BLAS_VARIABLE]:
        # Set by libai in a parent process (the launcher's, or a rank starting loader workers).
        choice = {"value": env[BLAS_VARIABLE], "source": "libai",
                  "reason": f"inherited from the parent process, from the CPU flags ({seen})"}
    elif BLAS_VARIABLE in env:  # even empty: ``OPENBLAS_CORETYPE=`` leaves it to OpenBLAS
        choice = {"value": env[BLAS_VARIABLE], "source": "user",
                  "reason": f"set in the environment (libai would choose "
                            f"{coretype_for(vendor, flags) or 'nothing'} for {seen})"}
    elif "oneflow" in sys.modules and environ is None:
        choice = {"value": "", "source": "too late",
                  "reason": "oneflow was imported before libai; OpenBLAS chose its kernels itself"}
    else:
        coretype = coretype_for(vendor, flags)
        if coretype is None:
            choice = {"value": "", "source": "none", "reason": f"left to OpenBLAS ({seen})"}
        else:
            env[BLAS_VARIABLE] = env[BLAS_CHOSEN_VARIABLE] = coretype
            choice = {"value": coretype, "source": "libai", "reason": f"from the CPU flags ({seen})"}
    if environ is None:
        _blas_choice.clear()
        _blas_choice.update(choice)
    return choice


def blas_choice() -> Dict[str, str]:
    """What :func:`choose_blas_kernels` decided at ``import libai`` in this process."""
    return dict(_blas_choice)


def check_blas_kernels(size: int = 96) -> float:
    """Multiply ``size`` x ``size`` matrices, and a one-row and a one-column product, with
    OneFlow and with NumPy (in float64); return the largest difference relative to the
    largest entry. Raise ``RuntimeError`` naming ``OPENBLAS_CORETYPE`` (and
    ``LIBAI_CBLAS_ROUTE`` when the route is on) when OneFlow computes something else
    (relative 1e-4).

    About a millisecond; run when the environment table is logged at the start of a run.
    """
    import numpy as np
    import oneflow as flow

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    error = 0.0
    for left, right in ((a, b), (a[:1], b), (a, b[:, :1])):
        ours = flow.matmul(flow.tensor(left), flow.tensor(right)).numpy().astype(np.float64)
        reference = left.astype(np.float64) @ right.astype(np.float64)
        error = max(error, float(np.abs(ours - reference).max() / np.abs(reference).max()))
    if not error <= 1e-4:  # also catches NaN
        value = os.environ.get(BLAS_VARIABLE, "")
        route = (f" or {ROUTE_VARIABLE}=0 (OneFlow's own sgemm)"
                 if _route.get("active") == "yes" else "")
        raise RuntimeError(
            f"OneFlow's matrix product differs from NumPy's by {error:.2e} (relative) with "
            f"{BLAS_VARIABLE}={value or '(unset)'}: its BLAS kernels do not suit this processor. "
            f"Start again with {BLAS_VARIABLE} unset (libai then picks one from the CPU flags) or "
            f"set to a type this CPU supports, e.g. Haswell for AVX2 processors{route}."
        )
    return error


def describe_blas_choice() -> str:
    """One line for the environment table: the value and where it came from."""
    choice = _blas_choice or {"value": os.environ.get(BLAS_VARIABLE, ""), "source": "",
                              "reason": "choose_blas_kernels did not run"}
    value = choice["value"] or ("'' (empty)" if choice["source"] == "user" else "unset")
    line = f"{value} ({choice['source'] + ': ' if choice['source'] else ''}{choice['reason']})"
    core = openblas_core_in_use()
    return line + (f"; OneFlow's OpenBLAS uses its {core} kernels" if core else "")


_OPENBLAS_CORES = (
    "SAPPHIRERAPIDS", "COOPERLAKE", "SKYLAKEX", "ZEN", "HASWELL", "SANDYBRIDGE", "EXCAVATOR",
    "STEAMROLLER", "PILEDRIVER", "BULLDOZER", "NEHALEM", "DUNNINGTON", "PENRYN", "CORE2",
    "BARCELONA", "BOBCAT", "OPTERON_SSE3", "OPTERON", "ATOM", "NANO", "PRESCOTT", "NORTHWOOD",
    "ATHLON", "BANIAS", "COPPERMINE", "KATMAI",
)


def openblas_core_in_use() -> Optional[str]:
    """The kernel family OneFlow's bundled OpenBLAS really selected (e.g. ``"ZEN"``), read
    from the library's ``gotoblas`` table pointer once OneFlow is loaded; ``None`` when that
    cannot be told (OneFlow not loaded, or a build without a dynamic-architecture OpenBLAS).

    With OneFlow 0.9 on an AMD EPYC and no ``OPENBLAS_CORETYPE`` this says ``PRESCOTT``
    (generic SSE3 kernels); ``SkylakeX`` gives ``HASWELL`` (the wheel has no AVX-512 kernels).
    """
    if "oneflow" not in sys.modules:
        return None
    for path in _loaded_libraries("liboneflow"):
        try:
            lib = ctypes.CDLL(path)
            current = ctypes.c_void_p.in_dll(lib, "gotoblas").value
        except (OSError, ValueError):
            continue
        for core in _OPENBLAS_CORES:
            try:
                if ctypes.addressof(ctypes.c_char.in_dll(lib, f"gotoblas_{core}")) == current:
                    return core
            except ValueError:
                continue
    return None


# ---------------------------------------------------------------------------------------------
# Matrix products with one row or one column
# ---------------------------------------------------------------------------------------------
ROUTE_VARIABLE = "LIBAI_CBLAS_ROUTE"
_ADAPTER_PATTERN = "_cblas_vector*.so"

# What ``route_matrix_products`` did in this process, for the environment table and the tests.
_route: Dict[str, str] = {}
_adapter: Optional[ctypes.CDLL] = None


def _loaded_libraries(word: str) -> List[str]:
    """Paths of the shared libraries loaded in this process whose file name contains ``word``."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = {line.split()[-1] for line in f if "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths if word in os.path.basename(p) and ".so" in os.path.basename(p))


# scipy-openblas32 prefixes every symbol, so its library never clashes with another OpenBLAS.
_ROUTE_PREFIX = "scipy_"


def _route_symbol(blas: ctypes.CDLL, name: str) -> Any:
    return getattr(blas, _ROUTE_PREFIX + name)


def _load_single_threaded(path: str) -> ctypes.CDLL:
    """Load an OpenBLAS that will only run one thread per product, without starting its pool.

    OpenBLAS starts one thread per further core when it loads, and each new thread busy-waits
    about a tenth of a second for work before it sleeps; ``openblas_set_num_threads(1)``
    afterwards cannot take that back. ``OPENBLAS_NUM_THREADS=1`` while the library loads (it
    reads the variable only then) starts no pool: 0.1 CPU-seconds less in every process that
    imports libai (ranks, loader workers, tools). The variable is restored at once, so NumPy's
    own OpenBLAS and the user's settings are untouched."""
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        return ctypes.CDLL(path)
    finally:
        if before is None:
            del os.environ["OPENBLAS_NUM_THREADS"]
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = before


def _route_target() -> Optional[ctypes.CDLL]:
    """The OpenBLAS of the ``scipy-openblas32`` package (a libai dependency: 32-bit integers,
    ``scipy_``-prefixed symbols), or ``None`` when it is not installed or lacks CBLAS.

    Found, not imported: the package's ``__init__`` reads its version through
    ``importlib.metadata``, a tenth of a second every process (ranks, loader workers, tools)
    would pay. NumPy's own OpenBLAS is not used: its thread count is NumPy's to set."""
    spec = importlib.util.find_spec("scipy_openblas32")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(glob.glob(os.path.join(folder, "lib", "libscipy_openblas*.so")))[:1]:
            try:
                blas = _load_single_threaded(path)
            except OSError:
                continue
            if all(hasattr(blas, _ROUTE_PREFIX + n) for n in ("cblas_sgemm", "cblas_sgemv")):
                return blas
    return None


def route_matrix_products(environ: Optional[MutableMapping[str, str]] = None) -> Dict[str, str]:
    """Before OneFlow loads, make its CPU matrix products run on a current OpenBLAS, with every
    product of one row or one column done as a matrix-vector product (GEMV).

    OneFlow 0.9 sends each float32 product on the CPU to ``cblas_sgemm`` of the OpenBLAS it
    bundles, which has no GEMV path: a one-row product (each step of generation at batch size
    1, the attention scores of one query) packs the whole weight like a large product and runs
    5-10x slower than GEMV. libai's small C adapter (``libai/csrc/cblas_vector.c``, built at
    install) defines ``cblas_sgemm``; loaded into the global symbol scope before OneFlow, it is
    the one OneFlow's kernels call. It hands one-row and one-column products to ``sgemv`` and
    all others to ``sgemm`` of the OpenBLAS in the ``scipy-openblas32`` package: years newer
    than OneFlow's, following ``OPENBLAS_CORETYPE``, one thread per product as OneFlow's own,
    and 6-27% faster on this project's training steps (see docs/benchmarks.md). Results agree
    with OneFlow's own to rounding (checked against NumPy when the environment table is logged,
    see :func:`check_blas_kernels`). On a GPU nothing changes: CUDA products never reach it.

    ``LIBAI_CBLAS_ROUTE=0`` keeps OneFlow's own ``cblas_sgemm``. Returns (and remembers, for
    the environment table) ``{"active", "reason"}``.
    """
    global _adapter
    env = os.environ if environ is None else environ
    adapters = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             _ADAPTER_PATTERN)))
    if env.get(ROUTE_VARIABLE, "1") == "0":
        choice = {"active": "no", "reason": f"{ROUTE_VARIABLE}=0: OneFlow's own sgemm"}
    elif _adapter is not None:
        choice = dict(_route)
    elif "oneflow" in sys.modules:
        choice = {"active": "no", "reason": "oneflow was imported before libai: OneFlow's own sgemm"}
    elif not adapters:
        choice = {"active": "no", "reason": "libai's cblas adapter is not built (it needs a C "
                  "compiler at install: `pip install -e .` or tools/setup_env.sh); OneFlow's "
                  "own sgemm"}
    else:
        try:
            blas = _route_target()
            if blas is None:
                raise LookupError("the scipy-openblas32 package is not installed (it is in "
                                  "libai's requirements: pip install scipy-openblas32)")
            # One thread per product, as OneFlow's own OpenBLAS runs: a multi-threaded one
            # changed the last step of a 12-iteration one-process Graph run (tests/parallel/
            # test_zero.py) against the same run with one thread, OneFlow's sgemm and DP=2.
            _route_symbol(blas, "openblas_set_num_threads")(ctypes.c_int(1))
            pointer = ctypes.c_void_p
            gemm = ctypes.cast(_route_symbol(blas, "cblas_sgemm"), pointer)
            gemv = ctypes.cast(_route_symbol(blas, "cblas_sgemv"), pointer)
            # Last: once loaded globally, the adapter is what OneFlow will call.
            adapter = ctypes.CDLL(adapters[-1], mode=ctypes.RTLD_GLOBAL)
            if adapter.libai_cblas_route(gemm, gemv) != 0:
                raise OSError("libai_cblas_route refused the BLAS's functions")
            adapter.libai_cblas_gemv_calls.restype = ctypes.c_longlong
            _adapter = adapter
            choice = {"active": "yes", "reason": f"scipy-openblas32's {_openblas_version(blas)} "
                      f"({os.path.basename(blas._name)}); one-row and one-column products as GEMV"}
        except (OSError, LookupError, AttributeError) as exc:
            choice = {"active": "no", "reason": f"could not route to another BLAS ({exc}); "
                      "OneFlow's own sgemm"}
    if environ is None:
        _route.clear()
        _route.update(choice)
    return choice


def _openblas_version(blas: ctypes.CDLL) -> str:
    """``"OpenBLAS 0.3.34"``: the first words of the library's configuration string."""
    try:
        config = _route_symbol(blas, "openblas_get_config")
    except AttributeError:
        return "OpenBLAS"
    config.restype = ctypes.c_char_p
    return " ".join(config().decode(errors="replace").split()[:2])


def matrix_route() -> Dict[str, str]:
    """What :func:`route_matrix_products` did at ``import libai`` in this process."""
    return dict(_route)


def gemv_products() -> int:
    """Products that took the GEMV path in this process so far (0 when the route is off)."""
    return 0 if _adapter is None else int(_adapter.libai_cblas_gemv_calls())
