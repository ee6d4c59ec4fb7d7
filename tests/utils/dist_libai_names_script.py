"""Run under ``oneflow.distributed.launch --nproc_per_node 2`` by test_distributed_libai_names.py.

Exercises LiBai's module-level distributed functions whose answer depends on the rank, and
prints one ``RESULT rank=<r> key=value ...`` record per rank for the test to check.
"""
import libai  # noqa: F401  (must precede oneflow)
import numpy as np
import oneflow as flow
from omegaconf import DictConfig

from libai.utils import distributed as dist

B, S0 = flow.sbp.broadcast, flow.sbp.split(0)


def main() -> None:
    rank = dist.get_rank()
    out = {"rank": rank}

    # Pure data parallelism: the size is derived from the launch and written back as LiBai does.
    cfg = DictConfig(dict(tensor_parallel_size=1, pipeline_parallel_size=1, device_type="cpu"))
    dist.setup_dist_util(cfg)
    out["dp_written"] = cfg.data_parallel_size
    out["dp_rank"] = dist.get_data_parallel_rank()
    out["last"] = int(dist.is_last_process())
    out["main"] = int(dist.is_main_process())
    out["bcast"] = dist.broadcast_py_object({"sender": rank, "items": [rank, "x"]})["sender"]

    # Each rank holds its own rows; as a split(0) global tensor the full value is [[0..2],[3..5]].
    piece = flow.tensor(np.arange(3, dtype=np.float32).reshape(1, 3) + 3 * rank)
    glob = piece.to_global(placement=dist.get_layer_placement(0), sbp=dist.get_nd_sbp([S0, B]))
    out["ttol"] = ",".join(str(int(v)) for v in dist.ttol(glob).numpy().ravel())
    out["tton_local"] = ",".join(str(int(v)) for v in dist.tton(glob, local_only=True).ravel())
    on_rank0 = dist.ttol(glob, ranks=[0], device="cpu")
    out["ranks0_numel"] = on_rank0.numel()
    gathered = dist.tensor_to_rank0(glob, device="cpu", to_local=True)
    out["rank0_sum"] = int(gathered.sum().item())

    # A local tensor becomes a broadcast global tensor on stage 0; rank 0's value is the value.
    default = dist.convert_to_distributed_default_setting(flow.full((2,), float(rank)))
    out["default_global"] = int(default.is_global)
    out["default_ranks"] = ",".join(str(r) for r in default.placement.ranks.ravel())
    dist.synchronize()

    # Tensor parallelism over both ranks: one replica, so both are data-parallel rank 0.
    dist.setup_dist_util(DictConfig(dict(tensor_parallel_size=2, device_type="cpu")))
    out["tp_dp_rank"] = dist.get_data_parallel_rank()
    out["tp_size"] = dist.get_tensor_parallel_size()
    out["mp_size"] = dist.get_dist_util().model_parallel_size
    print("RESULT " + " ".join(f"{k}={v}" for k, v in out.items()), flush=True)


if __name__ == "__main__":
    main()
