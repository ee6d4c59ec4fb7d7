"""libai: a lazy-config training library on OneFlow.

Importing ``libai`` first makes OneFlow's CUDA companion libraries loadable and reconciles
the launcher's ``LOCAL_RANK`` with OneFlow's view of nodes (see :mod:`libai._runtime`), so
``import libai`` followed by ``import oneflow`` works without any environment variable. On a
launched rank other than 0 it also waits for rank 0's control port, so that OneFlow's first
connection succeeds instead of sleeping 10 s before a retry.
"""
from libai._runtime import align_local_rank, preload_cuda_libraries, wait_for_rank0

align_local_rank()
wait_for_rank0()
preload_cuda_libraries()

__version__ = "0.1.0"
