"""What must happen before the first ``import oneflow``, so that users export nothing.

Two things: the CUDA companion libraries are made loadable, and the launcher's ``LOCAL_RANK``
is made to agree with OneFlow's idea of a node (see :func:`align_local_rank`).

The OneFlow 0.9.0 wheel is a CUDA 11 build whose native library links against cuBLAS 11,
cuDNN 8 and NVRTC 11 even on a CPU-only machine. Those libraries come from the PyPI packages
``nvidia-cublas-cu11``, ``nvidia-cudnn-cu11`` and ``nvidia-cuda-nvrtc-cu11`` and live in
``site-packages/nvidia/*/lib``, where the dynamic loader does not look. Loading each one with
``RTLD_GLOBAL`` (dependencies first) before the first ``import oneflow`` lets the loader resolve
OneFlow's references from the already loaded copies.
"""
import ctypes
import glob
import ipaddress
import os
import socket
import sys
import time
import warnings
from typing import List, MutableMapping, Optional

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
