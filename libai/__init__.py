"""libai: a lazy-config training library on OneFlow.

Importing ``libai`` first makes OneFlow's CUDA companion libraries loadable (see
:mod:`libai._runtime`), so ``import libai`` followed by ``import oneflow`` works without any
environment variable.
"""
from libai._runtime import preload_cuda_libraries

preload_cuda_libraries()

__version__ = "0.1.0"
