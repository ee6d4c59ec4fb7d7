"""libai: a lazy-config training library on OneFlow.

Importing ``libai`` first makes OneFlow's CUDA companion libraries loadable and reconciles
the launcher's ``LOCAL_RANK`` with OneFlow's view of nodes (see :mod:`libai._runtime`), so
``import libai`` followed by ``import oneflow`` works without any environment variable. On a
launched rank other than 0 it also waits for rank 0's control port, so that OneFlow's first
connection succeeds instead of sleeping 10 s before a retry. And it sets ``OPENBLAS_CORETYPE``
from the CPU flags unless the user set it, because OneFlow's bundled OpenBLAS does not
recognise some current processors and falls back to kernels at less than half their speed;
and it routes OneFlow's CPU matrix products to a current OpenBLAS (``scipy-openblas32``), whose
GEMV does one-row products (a generation step at batch 1) 5-10x faster; training steps ran
6-27% faster (:func:`libai._blas.route_matrix_products`).
On a machine without a GPU it runs OneFlow's eager CPU kernels on the scheduler thread
(:func:`libai._runtime.choose_vm_threading`), which otherwise spins on a second core, and
uses OneFlow's own CPU kernels instead of oneDNN's for broadcasting arithmetic
(:func:`libai._runtime.choose_cpu_elementwise_kernels`): several broadcast patterns fall back to
oneDNN's reference loop, 10-100x slower.
In a launched rank it asks for SIGTERM when the launcher dies (see
:func:`libai._runtime.stop_with_launcher`), so ranks never train on as orphans, and it watches
OneFlow's rendezvous: a rank whose peers do not all arrive says what it waits for and gives up
after a join timeout (:mod:`libai._join`).
"""
from libai._runtime import (
    align_local_rank, choose_blas_kernels, choose_cpu_elementwise_kernels, choose_vm_threading,
    preload_cuda_libraries, report_import_order, route_matrix_products, stop_with_launcher,
)
from libai._join import check_launch, wait_for_master, watch_rendezvous

choose_blas_kernels()
route_matrix_products()
choose_vm_threading()
choose_cpu_elementwise_kernels()
align_local_rank()
stop_with_launcher()
check_launch()
wait_for_master()
watch_rendezvous()
preload_cuda_libraries()
report_import_order()  # oneflow came first (and libai_import_hook.pth is not installed): say so

__version__ = "0.1.0"


def __getattr__(name: str):
    """``libai.plan`` (the preflight planner, callable as ``libai.plan(cfg, ...)``) loads on first
    use, so ``import libai`` stays light."""
    if name == "plan":
        import importlib

        return importlib.import_module("libai.plan")
    raise AttributeError(f"module 'libai' has no attribute {name!r}")
