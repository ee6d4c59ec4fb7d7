"""What must happen before the first ``import oneflow``, so that users export nothing.

The CUDA companion libraries are made loadable, the launcher's ``LOCAL_RANK`` is made to agree
with OneFlow's idea of a node (see :func:`align_local_rank`), OpenBLAS is told which kernels
suit this processor (see :func:`choose_blas_kernels`), and OneFlow's CPU matrix products are
routed to a current OpenBLAS, GEMV included (see :func:`route_matrix_products`; both live in
:mod:`libai._blas`).

The OneFlow 0.9.0 wheel is a CUDA 11 build whose native library links against cuBLAS 11,
cuDNN 8 and NVRTC 11 even on a CPU-only machine. Those libraries come from the PyPI packages
``nvidia-cublas-cu11``, ``nvidia-cudnn-cu11`` and ``nvidia-cuda-nvrtc-cu11`` and live in
``site-packages/nvidia/*/lib``, where the dynamic loader does not look. Loading each one
(dependencies first) before the first ``import oneflow`` puts it in the process: when OneFlow's
native library names one as a dependency, the loader matches it by its soname and takes the
loaded copy, and OneFlow's references to cuBLAS and cuDNN resolve against it. They are loaded
``RTLD_LOCAL``: in the global symbol scope, which each of the ~370,000 symbol relocations of
OneFlow's own libraries searches first, they made every ``import oneflow`` cost 0.1 CPU-seconds
more (675 against 580 ms, ``perf stat`` of ``import libai, oneflow``). Nothing needs them there:
OneFlow lists every CUDA library whose symbols it uses among its dependencies, and a library
opened later by name (cuDNN opening NVRTC) is matched by soname whatever the mode.
"""
import ctypes
import glob
import ipaddress
import os
import sys
import warnings
from typing import Dict, List, MutableMapping, Optional

# Which BLAS the products run on (kernels for this processor, the route to a current OpenBLAS)
# lives in libai/_blas.py; its public names are re-exported here with the rest of what runs
# before OneFlow loads.
from libai._blas import (  # noqa: F401
    BLAS_CHOSEN_VARIABLE, BLAS_VARIABLE, ROUTE_VARIABLE, blas_choice, check_blas_kernels,
    choose_blas_kernels, coretype_for, describe_blas_choice, gemv_products, matrix_route,
    openblas_core_in_use, read_cpu_flags, route_matrix_products,
)

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
                    ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
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
    if "oneflow" in sys.modules and environ is None and VM_THREAD_VARIABLE not in os.environ:
        # OneFlow reads it when its virtual machine starts, at ``import oneflow``
        _vm_choice.update(value="", source="too late")
        return dict(_vm_choice)
    _vm_choice.update(_set_unless_gpu_or_user(VM_THREAD_VARIABLE, "0", "CPU kernels on the scheduler thread",
                                              environ, has_gpu))
    return dict(_vm_choice)


_vm_choice: Dict[str, str] = {}


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


# ---------------------------------------------------------------------------------------------
# When oneflow came first
# ---------------------------------------------------------------------------------------------
IMPORT_HOOK_FIX = (
    "import libai before oneflow, or install libai's start-up hook, which imports libai at the "
    "first `import oneflow` in any order: `pip install .` installs it, tools/setup_env.sh writes "
    "it for the editable install (libai_import_hook.pth in site-packages)"
)
_import_order_reported = False


def lost_to_import_order() -> List[str]:
    """The process-wide choices this ``import libai`` could not make because OneFlow was
    already loaded (empty when libai came first, or with OneFlow's defaults wanted anyway)."""
    lost = []
    if blas_choice().get("source") == "too late":
        lost.append(f"{BLAS_VARIABLE} (OpenBLAS kernels for this processor; OneFlow's OpenBLAS "
                    "falls back to generic ones on some processors)")
    if matrix_route().get("reason", "").startswith("oneflow was imported before libai"):
        lost.append("the route of CPU matrix products to a current OpenBLAS (one-row products "
                    "as GEMV, 5-10x faster in generation)")
    if _vm_choice.get("source") == "too late":
        lost.append(f"{VM_THREAD_VARIABLE}=0 (CPU kernels on the scheduler thread; OneFlow's "
                    "default keeps a second core spinning)")
    return lost


def report_import_order() -> List[str]:
    """Warn once per process, at ``import libai``, naming what importing oneflow first cost and
    the fix; return what was lost. (``ONEFLOW_ENABLE_ONEDNN_OPTS`` is not lost: OneFlow reads it
    at each operation, so libai's choice applies in either order.)"""
    global _import_order_reported
    lost = lost_to_import_order()
    if lost and not _import_order_reported:
        _import_order_reported = True
        warnings.warn(
            "oneflow was imported before libai, so this process runs without libai's choices: "
            + "; ".join(lost) + ". CPU training and generation can be up to 2x slower. Fix: "
            + IMPORT_HOOK_FIX + ".", RuntimeWarning, stacklevel=3)
    return lost
