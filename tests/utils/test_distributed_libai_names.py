"""LiBai's module-level distributed functions, mapped onto ParallelLayout.

One process for everything that does not depend on the rank; one two-process launch for what
does (data-parallel rank, broadcast, gathering a split tensor).
"""
import logging
import os

import numpy as np
import oneflow as flow
import pytest
from omegaconf import DictConfig, OmegaConf

from libai.utils import distributed as dist
from libai.utils.testing import launch, rank_records

HERE = os.path.dirname(os.path.abspath(__file__))
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)


@pytest.fixture(autouse=True)
def _fresh_layouts():
    dist.reset_layouts()
    yield
    dist.reset_layouts()


def synthetic(world_size, rank=0, **sizes):
    """A layout for a world of ``world_size`` processes, seen from ``rank`` (no launch needed)."""
    return dist.ParallelLayout.from_config(dict(device_type="cpu", **sizes), world_size=world_size, rank=rank)


def test_setup_dist_util_sets_the_process_layout_that_layers_read():
    with pytest.raises(RuntimeError, match="no parallel layout is active"):
        dist.current_layout()
    layout = dist.setup_dist_util(DictConfig(dict(data_parallel_size=1, tensor_parallel_size=1,
                                                  pipeline_parallel_size=1, device_type="cpu")))
    assert dist.current_layout() is layout is dist.get_dist_util()
    assert (dist.get_data_parallel_size(), dist.get_tensor_parallel_size(),
            dist.get_pipeline_parallel_size(), dist.get_data_parallel_rank()) == (1, 1, 1, 0)
    assert dist.get_layer_placement(0) == layout.layer_placement(0)
    assert dist.get_layer_placement(0).type == "cpu"
    # An entered layout wins over the process layout while it is entered.
    other = synthetic(4, rank=3, tensor_parallel_size=2)
    with other:
        assert dist.current_layout() is other and dist.get_data_parallel_size() == 2
    assert dist.current_layout() is layout
    dist.reset_layouts()
    assert not dist.has_layout()


def test_setup_dist_util_writes_the_resolved_sizes_back_into_the_config():
    cfg = OmegaConf.create(dict(data_parallel_size=None, tensor_parallel_size=1, device_type="cpu"))
    OmegaConf.set_struct(cfg, True)  # writing back must not trip over struct mode
    dist.setup_dist_util(cfg)
    assert (cfg.data_parallel_size, cfg.tensor_parallel_size, cfg.pipeline_parallel_size) == (1, 1, 1)
    assert (cfg.num_nodes, cfg.num_gpus_per_node) == (1, 1)
    plain = dict(device_type="cpu")
    dist.setup_dist_util(plain)
    assert plain["data_parallel_size"] == 1
    frozen = OmegaConf.create(dict(device_type="cpu"))
    OmegaConf.set_readonly(frozen, True)
    dist.setup_dist_util(frozen)  # a read-only config is left as it is
    assert "data_parallel_size" not in frozen


def test_sizes_that_do_not_fit_the_launch_are_refused_not_rederived():
    with pytest.raises(ValueError, match=r"but the launch has 1 process"):
        dist.setup_dist_util(DictConfig(dict(data_parallel_size=2, device_type="cpu")))
    assert not dist.has_layout()


def test_get_dist_util_sets_up_one_process_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="libai.utils.distributed"):
        layout = dist.get_dist_util()
    assert "Distributed env is not set up" in caplog.text
    assert layout.world_size == 1 and layout.data_parallel_size == 1
    assert dist.current_layout() is layout


@pytest.mark.parametrize(
    "sizes, world, hierarchy",
    [
        (dict(tensor_parallel_size=2, pipeline_parallel_size=2, pipeline_num_layers=4), 8, (2, 2)),
        (dict(), 4, None),
        (dict(tensor_parallel_size=4), 4, None),
    ],
)
def test_the_dist_util_attributes_have_libais_values(sizes, world, hierarchy):
    layout = synthetic(world, **sizes)
    dp, tp, pp = layout.data_parallel_size, layout.tensor_parallel_size, layout.pipeline_parallel_size
    assert dp * tp * pp == world
    assert layout.model_parallel_size == tp  # LiBai's property is the tensor parallel size
    assert layout.parallel_hierarchy == hierarchy
    assert layout.is_data_model_parallel() == (dp > 1 and tp > 1)
    assert layout.is_data_parallel() == (dp > 1)
    assert layout.is_tensor_model_parallel() == (tp > 1)
    assert layout.is_pipeline_model_parallel() == (pp > 1)
    assert (layout.num_nodes, layout.num_gpus_per_node) == (1, world)  # not the launched world


def test_data_parallel_rank_follows_libais_formula_on_every_rank():
    # LiBai: (rank // tensor_parallel_size) % data_parallel_size, ranks stage-major.
    for rank in range(8):
        layout = synthetic(8, rank=rank, tensor_parallel_size=2, pipeline_parallel_size=2,
                           pipeline_num_layers=4)
        with layout:
            assert dist.get_data_parallel_rank() == (rank // 2) % 2
    for rank in range(4):
        with synthetic(4, rank=rank):
            assert dist.get_data_parallel_rank() == rank


def test_layer_stage_and_ranks_under_a_pipeline():
    with synthetic(4, tensor_parallel_size=2, pipeline_parallel_size=2, pipeline_num_layers=5):
        util = dist.get_dist_util()
        assert [util.get_layer_stage_id(i) for i in range(5)] == [0, 0, 0, 1, 1]
        assert util.get_layer_stage_id(-1) == 1
        assert util.get_layer_ranks(4) == [[2, 3]]
        assert dist.get_layer_placement(4).ranks.tolist() == [[2, 3]]


def test_set_device_type_replaces_the_layout_in_use():
    layout = dist.setup_dist_util(DictConfig(dict(device_type="cpu")))
    if not flow.cuda.is_available():
        with pytest.raises(RuntimeError, match="sees no GPU.*device_type=cpu"):
            dist.set_device_type("cuda")
    with pytest.raises(ValueError, match="'cpu' or 'cuda', got 'tpu'"):
        dist.set_device_type("tpu")
    dist.set_device_type("cpu")
    assert dist.get_dist_util() is not layout  # a new value replaced the old one
    assert dist.get_dist_util() == layout
    dist.get_dist_util().set_device_type("cpu")
    with pytest.raises(RuntimeError, match="this layout is not it"):
        layout.set_device_type("cpu")
    process_layout = dist.get_dist_util()
    with synthetic(1, tensor_parallel_size=1) as entered:
        dist.set_device_type("cpu")
        assert dist.current_layout() is not entered and dist.current_layout() == entered
    assert dist.get_dist_util() is process_layout  # the entered layout changed, not this one


def test_get_layer_placement_falls_back_to_the_cpu_without_a_gpu():
    dist.setup_dist_util(DictConfig(dict(device_type="cpu")))
    expected = "cuda" if flow.cuda.is_available() else "cpu"
    assert dist.get_layer_placement(0, device_type="cuda").type == expected


def test_sbp_helpers():
    dist.setup_dist_util(DictConfig(dict(device_type="cpu")))
    assert dist.same_sbp([B, S0], [B, S0])
    assert not dist.same_sbp([B], [S0])
    with pytest.raises(ValueError, match="lengths 1 and 2"):
        dist.same_sbp([B], [B, B])
    assert dist.get_hidden_sbp() == dist.get_nd_sbp([S0, B]) == [S0, B]
    with synthetic(4):  # pure data parallelism: one axis, split over the data ranks
        assert dist.get_hidden_sbp() == [S0]


def test_process_helpers_in_one_process():
    assert (dist.get_rank(), dist.get_local_rank(), dist.get_world_size(), dist.get_num_nodes()) == (0, 0, 1, 1)
    assert dist.is_main_process() and dist.is_last_process()
    obj = {"a": [1, 2]}
    assert dist.broadcast_py_object(obj) is obj
    dist.synchronize()  # a no-op, must not block


def test_convert_to_distributed_default_setting_takes_tensors_and_modules():
    dist.setup_dist_util(DictConfig(dict(device_type="cpu")))
    # one process: a local tensor becomes a global one, broadcast on stage 0, as in LiBai
    t = dist.convert_to_distributed_default_setting(flow.ones(2))
    assert t.is_global and t.placement == dist.get_layer_placement(0)
    assert list(t.sbp) == dist.get_nd_sbp([B, B])
    assert t.to_local().numpy().tolist() == [1.0, 1.0]
    model = flow.nn.Linear(3, 2)
    weight = model.weight.numpy().copy()
    model._apply(dist.convert_to_distributed_default_setting)  # LiBai's way of calling it
    assert model.weight.is_global and model.weight.placement == dist.get_layer_placement(0)
    assert np.array_equal(model.weight.to_local().numpy(), weight)
    assert dist.convert_to_distributed_default_setting(model) is model
    plain = flow.nn.Linear(3, 2)
    assert dist.convert_to_distributed_default_setting(plain).weight.is_global  # a module too


def test_ttol_tton_and_tensor_to_rank0_in_one_process():
    local = flow.ones(2, 3)
    assert dist.ttol(local) is local and dist.tensor_to_rank0(local) is local
    np.testing.assert_array_equal(dist.tton(local), np.ones((2, 3)))
    glob = flow.arange(6, dtype=flow.float32).reshape(2, 3).to_global(
        placement=flow.placement("cpu", ranks=[0]), sbp=S0)
    expected = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(dist.tton(glob), expected)
    np.testing.assert_array_equal(dist.tton(glob, local_only=True), expected)
    np.testing.assert_array_equal(dist.ttol(glob, ranks=[0]).numpy(), expected)  # "cuda" -> cpu
    moved = dist.tensor_to_rank0(glob, device="cuda", to_local=True)  # no GPU: stays on the CPU
    assert not moved.is_global and moved.numpy().tolist() == expected.tolist()


def test_rank_dependent_functions_on_two_processes():
    result = launch(os.path.join(HERE, "dist_libai_names_script.py"), 2, timeout=240)
    assert result.returncode == 0, result.stdout[-4000:]
    records = rank_records(result.stdout, ranks=2)
    for rank, rec in records.items():
        assert rec["dp_written"] == "2" and rec["dp_rank"] == str(rank)
        assert (rec["main"], rec["last"]) == (("1", "0") if rank == 0 else ("0", "1"))
        assert rec["bcast"] == "0"  # rank 0's object on both ranks
        assert rec["ttol"] == "0,1,2,3,4,5"  # the full split(0) value on every rank
        assert rec["tton_local"] == ("0,1,2" if rank == 0 else "3,4,5")
        assert rec["ranks0_numel"] == ("6" if rank == 0 else "0")  # LiBai: other ranks get nothing
        assert rec["rank0_sum"] == "15"
        assert (rec["default_global"], rec["default_ranks"]) == ("1", "0,1")
        assert (rec["tp_dp_rank"], rec["tp_size"], rec["mp_size"]) == ("0", "2", "2")
