"""Make OneFlow importable without the user exporting anything.

The OneFlow 0.9.0 wheel is a CUDA 11 build whose native library links against cuBLAS 11,
cuDNN 8 and NVRTC 11 even on a CPU-only machine. Those libraries come from the PyPI packages
``nvidia-cublas-cu11``, ``nvidia-cudnn-cu11`` and ``nvidia-cuda-nvrtc-cu11`` and live in
``site-packages/nvidia/*/lib``, where the dynamic loader does not look. Loading each one with
``RTLD_GLOBAL`` (dependencies first) before the first ``import oneflow`` lets the loader resolve
OneFlow's references from the already loaded copies.
"""
import ctypes
import glob
import os
import sys
from typing import List

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
