"""Process helpers, valid with or without a parallel layout: this process's rank, the world
size, the node count, a barrier, the launch check, the default device type, and waiting for this process's queued work."""
import oneflow as flow

__all__ = [
    "check_launch",
    "default_device_type",
    "get_local_rank",
    "get_num_nodes",
    "get_rank",
    "get_world_size",
    "is_main_process",
    "synchronize",
    "wait_for_queued_work",
]


def get_rank() -> int:
    """This process's global rank (0 when not launched)."""
    return flow.env.get_rank()


def get_local_rank() -> int:
    """This process's rank on its node."""
    return flow.env.get_local_rank()


def get_world_size() -> int:
    """Number of processes in the run."""
    return flow.env.get_world_size()


def is_main_process() -> bool:
    """True on rank 0, the process that writes files and logs to the console."""
    return get_rank() == 0


def synchronize() -> None:
    """Barrier across all processes; a no-op in a single process."""
    if get_world_size() > 1:
        flow.comm.barrier()


def check_launch() -> None:
    """Refuse a launch whose ranks OneFlow cannot tell apart, instead of hanging.

    OneFlow counts machines by the addresses its processes connect from. When it sees a single
    machine, every process's ``LOCAL_RANK`` must be its global rank; several launchers
    (``--nnodes``) on one machine give each process ``LOCAL_RANK=0`` instead, and OneFlow then
    hangs or computes wrong collectives. ``import libai`` repairs this before OneFlow starts when
    the master address is a loopback address (:func:`libai._runtime.align_local_rank`); this
    catches what it could not (another address of this machine, or oneflow imported first).
    """
    world, rank, local = get_world_size(), get_rank(), get_local_rank()
    if world > 1 and flow.env.get_node_size() == 1 and local != rank:
        raise RuntimeError(
            f"rank {rank} has LOCAL_RANK={local}, but OneFlow sees all {world} processes on one "
            "machine: several launchers (--nnodes) were started on this machine. Meet at "
            "--master_addr 127.0.0.1 and import libai before oneflow (libai then sets LOCAL_RANK), "
            f"or start one launcher with --nproc_per_node {world}"
        )


def default_device_type() -> str:
    """``"cuda"`` where OneFlow sees a GPU, else ``"cpu"``."""
    return "cuda" if flow.cuda.is_available() else "cpu"


def get_num_nodes() -> int:
    """Machines in the run, as OneFlow groups processes into nodes."""
    return flow.env.get_node_size()


def wait_for_queued_work() -> None:
    """Block until every operation this process has queued so far has finished.

    OneFlow runs eager operations (and the launches of a compiled ``nn.Graph``) asynchronously:
    a training step's Python code returns long before its kernels have run, by up to several
    steps. A clock read right after a step therefore measures how fast Python can queue work,
    not how fast the work is done. Reading the clock after this call measures the work.

    The wait is local to this process. In a multi-process run every step ends in collectives
    (gradient all-reduce, or the tensor/pipeline exchanges), so this rank cannot be ahead of
    the others by more than the tail of one step; no cross-rank barrier is needed, and none is
    taken, so ranks that time different iterations cannot deadlock.
    """
    flow._oneflow_internal.eager.Sync()
