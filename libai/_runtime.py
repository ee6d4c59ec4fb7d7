"""What must happen before the first ``import oneflow``, so that users export nothing.

The CUDA companion libraries are made loadable, the launcher's ``LOCAL_RANK`` is made to agree
with OneFlow's idea of a node (see :func:`align_local_rank`), OpenBLAS is told which kernels
suit this processor (see :func:`choose_blas_kernels`), and OneFlow's CPU matrix products are
routed to a current OpenBLAS, GEMV included (see :func:`route_matrix_products`).

The OneFlow 0.9.0 wheel is a CUDA 11 build whose native library links against cuBLAS 11,
cuDNN 8 and NVRTC 11 even on a CPU-only machine. Those libraries come from the PyPI packages
``nvidia-cublas-cu11``, ``nvidia-cudnn-cu11`` and ``nvidia-cuda-nvrtc-cu11`` and live in
``site-packages/nvidia/*/lib``, where the dynamic loader does not look. Loading each one with
``RTLD_GLOBAL`` (dependencies first) before the first ``import oneflow`` lets the loader resolve
OneFlow's references from the already loaded copies.
"""
import ctypes
import glob
import importlib.util
import ipaddress
import os
import socket
import sys
import time
import warnings
from typing import Any, Dict, FrozenSet, List, MutableMapping, Optional, Tuple

# Order matters: each library must come after the ones it depends on.
_LIBRARY_ORDER = (
    ("cuda_nvrtc", "libnvrtc.so*"),
    ("cublas", "libcublasLt.so*"),
    ("cublas", "libcublas.so*"),
    ("cudnn", "libcudnn_ops_infer.so*"),
    ("cudnn", "libcudnn_ops_train.so*"),
    ("cudnn", "libcudnn_cnn_infer.so*"),
    ("cudnn", "libcudnn_cnn_train.so*"),
    ("cudnn", "libcudnn_adv_infer.so*"),
    ("cudnn", "libcudnn_adv_train.so*"),
    ("cudnn", "libcudnn.so*"),
)

_loaded: List[str] = []


def _nvidia_roots() -> List[str]:
    roots = []
    for entry in sys.path:
        candidate = os.path.join(entry, "nvidia")
        if os.path.isdir(candidate):
            roots.append(candidate)
    return roots


def preload_cuda_libraries() -> List[str]:
    """Load the CUDA companion libraries of the OneFlow wheel; return the paths loaded.

    Does nothing once ``oneflow`` is imported, or when the libraries are not installed
    (a system CUDA install then has to provide them, as for any CUDA program).
    """
    if _loaded or "oneflow" in sys.modules:
        return list(_loaded)
    for root in _nvidia_roots():
        for package, pattern in _LIBRARY_ORDER:
            for path in sorted(glob.glob(os.path.join(root, package, "lib", pattern))):
                if "builtins" in os.path.basename(path):
                    continue
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                    _loaded.append(path)
                except OSError:
                    # A library the loader cannot open here is reported by OneFlow's own
                    # ImportError, which names the missing file; nothing to add.
                    pass
        if _loaded:
            break
    return list(_loaded)


def _is_loopback(host: str) -> bool:
    if host.strip().lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def align_local_rank(environ: Optional[MutableMapping[str, str]] = None) -> Optional[str]:
    """Make ``LOCAL_RANK`` equal ``RANK`` when every process of the run is on this machine.

    OneFlow 0.9 counts nodes by the host addresses its processes report, and reads
    ``LOCAL_RANK`` (the process's index on its node, which also picks its GPU) from the
    environment. ``oneflow.distributed.launch --nnodes 2`` started twice on one machine (two
    "nodes" meeting at ``127.0.0.1``) hands both processes ``LOCAL_RANK=0``, while OneFlow sees a
    single node of two processes: two processes then claim the same local slot, collectives
    return wrong values (an all-reduce of ones gave 0.0) and rank 0 hangs. A master address on
    the loopback interface means no process can be on another machine, so the local rank *is*
    the global rank; on several real machines nothing changes.

    Returns the new ``LOCAL_RANK`` when it was changed, else ``None``. Must run before
    ``import oneflow`` (OneFlow reads the variable once); afterwards it only warns.
    """
    env = os.environ if environ is None else environ
    rank, local_rank = env.get("RANK"), env.get("LOCAL_RANK")
    if rank is None or local_rank is None or rank == local_rank:
        return None
    if int(env.get("WORLD_SIZE", "1")) <= 1 or not _is_loopback(env.get("MASTER_ADDR", "")):
        return None
    if "oneflow" in sys.modules and environ is None:
        warnings.warn(
            f"oneflow was imported before libai in a run whose processes all meet at "
            f"{env.get('MASTER_ADDR')} (one machine) with LOCAL_RANK={local_rank} != RANK={rank}: "
            "OneFlow will put two processes in one local slot and hang. Import libai before "
            "oneflow, or launch one node with --nproc_per_node instead of several --nnodes.",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    env["LOCAL_RANK"] = rank
    return rank


RANK0_WAIT_SECONDS = 20.0


def wait_for_rank0(environ: Optional[MutableMapping[str, str]] = None,
                   timeout: float = RANK0_WAIT_SECONDS) -> float:
    """On a launched rank other than 0, wait until rank 0's control port accepts connections.

    When OneFlow 0.9 starts (at ``import oneflow``) every rank connects to rank 0's control
    server at ``MASTER_ADDR:MASTER_PORT``; a rank that tries before rank 0 is listening logs
    "LoadServer ... Failed at 0 times" and sleeps a fixed 10 s before its next try. Ranks start
    together, so on a busy machine one of them often loses that race and the whole launch
    starts 10 s late. Polling the port first (every 50 ms) lets OneFlow's first try succeed.

    Does nothing for rank 0, a one-process run, or once oneflow is imported. Gives up after
    ``timeout`` seconds and leaves the rest to OneFlow's own retries. Returns the seconds waited.
    """
    env = os.environ if environ is None else environ
    if "oneflow" in sys.modules and environ is None:
        return 0.0
    rank, addr, port = env.get("RANK"), env.get("MASTER_ADDR"), env.get("MASTER_PORT")
    if rank in (None, "0") or not addr or not port or int(env.get("WORLD_SIZE", "1")) <= 1:
        return 0.0
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            socket.create_connection((addr, int(port)), timeout=1.0).close()
            break
        except OSError:
            time.sleep(0.05)
    return time.monotonic() - start


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
                              "reason": "libai._runtime did not run"}
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
                blas = ctypes.CDLL(path)
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


# ---------------------------------------------------------------------------------------------
# Where OneFlow's virtual machine runs CPU kernels
# ---------------------------------------------------------------------------------------------
VM_THREAD_VARIABLE = "ONEFLOW_VM_COMPUTE_ON_WORKER_THREAD"


def _has_nvidia_device() -> bool:
    """An NVIDIA device node, or the driver's proc folder: a GPU may be used by this process."""
    return os.path.exists("/dev/nvidia0") or os.path.isdir("/proc/driver/nvidia/gpus")


def choose_vm_threading(environ: Optional[MutableMapping[str, str]] = None,
                        has_gpu: Optional[bool] = None) -> Dict[str, str]:
    """Run eager CPU kernels on OneFlow's scheduler thread on a machine with no GPU.

    By default OneFlow 0.9 runs each eager kernel on a worker thread while the scheduler thread
    spins waiting for it: a one-process CPU run keeps two cores busy for one core's work (measured:
    6.5-7.4 CPU-s against 3.3-3.7 s of wall time for 30 steps of a small GPT; with the variable
    at 0, 3.8-3.9 CPU-s for the same wall time and the same results). Where several processes
    share the cores (data-parallel ranks, loader workers, other jobs) the spinning takes time
    from real work. So with no NVIDIA device, libai sets ``ONEFLOW_VM_COMPUTE_ON_WORKER_THREAD=0``
    before OneFlow loads; a value the user set is kept, and with a GPU OneFlow's default stands.
    Returns ``{"value", "source"}`` for the environment table.
    """
    return _set_unless_gpu_or_user(VM_THREAD_VARIABLE, "0", "CPU kernels on the scheduler thread",
                                   environ, has_gpu)


def _set_unless_gpu_or_user(variable: str, value: str, why: str,
                            environ: Optional[MutableMapping[str, str]],
                            has_gpu: Optional[bool]) -> Dict[str, str]:
    """Set a OneFlow variable to libai's CPU choice, unless the user set it or a GPU is present."""
    env = os.environ if environ is None else environ
    if variable in env:
        return {"value": env[variable], "source": "user or parent process"}
    if has_gpu if has_gpu is not None else _has_nvidia_device():
        return {"value": "", "source": "OneFlow's default (a GPU is present)"}
    env[variable] = value
    return {"value": value, "source": f"libai (no GPU: {why})"}


# ---------------------------------------------------------------------------------------------
# Which CPU elementwise kernels OneFlow uses
# ---------------------------------------------------------------------------------------------
ONEDNN_VARIABLE = "ONEFLOW_ENABLE_ONEDNN_OPTS"


def choose_cpu_elementwise_kernels(environ: Optional[MutableMapping[str, str]] = None,
                                   has_gpu: Optional[bool] = None) -> Dict[str, str]:
    """Use OneFlow's own CPU kernels for broadcasting arithmetic and softmax on a machine with no GPU.

    OneFlow 0.9 sends CPU broadcasting binary ops, n-ary adds and softmax to its bundled oneDNN,
    whose optimised kernels cover only some broadcast patterns; the others fall back to oneDNN's
    reference loop, one element at a time. Measured on this project's 2-core AMD EPYC with one
    thread: ``[512, 8192] - [512, 1]`` (a per-row statistic, as in a loss or a norm) 360 ms with
    oneDNN against 2.6 ms without; ``[4, 128, 256] * [4, 128, 1]`` 11 ms against 0.06; a comparison
    giving booleans 12 ms against 0.1. oneDNN wins a few (softmax over ``[4, 8, 128, 128]`` 0.6 ms
    against 3.3; a mask broadcast over heads 0.2 against 4.1), but on whole training steps
    OneFlow's kernels take 17-70% less CPU in every family of the zoo (GPT-2 of 4 layers, hidden
    256: Eager 1.12 -> 0.67, Graph 1.29 -> 0.78 CPU-s per step, the same losses; the sweep is in
    docs/benchmarks.md, "oneDNN's reference loops"). So with no NVIDIA device,
    libai sets ``ONEFLOW_ENABLE_ONEDNN_OPTS=0`` before OneFlow loads; a value the user set is kept,
    and with a GPU OneFlow's default stands. Returns ``{"value", "source"}`` for the environment
    table.
    """
    return _set_unless_gpu_or_user(ONEDNN_VARIABLE, "0", "OneFlow's own CPU kernels, not oneDNN's",
                                   environ, has_gpu)


def onednn_elementwise_enabled(environ: Optional[MutableMapping[str, str]] = None) -> bool:
    """Whether OneFlow sends CPU elementwise ops to oneDNN in this process: the variable is on
    unless set to 0 or false (OneFlow's reading). Layers whose fast layout differs between the two
    kernel sets (``BatchNorm2d``) ask here rather than read the variable themselves."""
    env = os.environ if environ is None else environ
    return env.get(ONEDNN_VARIABLE, "1").strip().lower() not in ("0", "false")


_PR_SET_PDEATHSIG = 1
_PR_GET_PDEATHSIG = 2


def stop_with_launcher(environ: Optional[MutableMapping[str, str]] = None) -> Optional[int]:
    """In a launched rank, ask the kernel to send SIGTERM when the launcher dies.

    ``python -m oneflow.distributed.launch`` does not pass a signal on to its ranks when it is
    not the leader of its process group (started from a script, a job step, a container's
    entry point): told to stop, it prints "Main process received SIGTERM, exiting" and exits,
    and its ranks train on as orphans, saving nothing. With a parent-death signal the ranks learn
    of the launcher's death and stop as a SIGTERM stops them (libai's ``PreemptionHandler``:
    finish the iteration, save a checkpoint, exit). A rank whose parent-death signal is already
    set (``python -m libai.launch`` sets SIGKILL, it forwards signals itself) keeps it.

    Only in a launched rank (``RANK``, ``LOCAL_RANK`` and ``MASTER_PORT`` in the environment),
    only on Linux. Returns the signal set, else ``None``.
    """
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux") or not all(k in env for k in ("RANK", "LOCAL_RANK", "MASTER_PORT")):
        return None
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        current = ctypes.c_int(0)
        if libc.prctl(_PR_GET_PDEATHSIG, ctypes.byref(current), 0, 0, 0) != 0 or current.value:
            return None
        parent = os.getppid()
        if parent == 1 or libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
            return None
    except (OSError, AttributeError):
        return None
    if os.getppid() != parent:  # the launcher died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)
    return int(signal.SIGTERM)
