"""LiBai's module-level distributed functions, mapped onto ParallelLayout (one process)."""
import logging

import oneflow as flow
import pytest
from omegaconf import DictConfig

from libai.utils import distributed as dist


@pytest.fixture(autouse=True)
def _fresh_layouts():
    dist.reset_layouts()
    yield
    dist.reset_layouts()


def test_setup_dist_util_sets_the_process_layout_that_layers_read():
    with pytest.raises(RuntimeError, match="no parallel layout is active"):
        dist.current_layout()
    layout = dist.setup_dist_util(DictConfig(dict(data_parallel_size=1, tensor_parallel_size=1,
                                                  pipeline_parallel_size=1, device_type="cpu")))
    assert dist.current_layout() is layout is dist.get_dist_util()
    assert (layout.data_parallel_size, layout.tensor_parallel_size, layout.pipeline_parallel_size) == (1, 1, 1)
    assert layout.model_parallel_size == 1 and not layout.is_tensor_model_parallel()
    assert dist.get_layer_placement(0) == layout.layer_placement(0)
    assert dist.get_layer_placement(0).type == "cpu"
    # An entered layout still wins over the process layout.
    other = dist.ParallelLayout.from_config(DictConfig(dict(device_type="cpu")), world_size=1, rank=0)
    with other:
        assert dist.current_layout() is other
    assert dist.current_layout() is layout
    dist.reset_layouts()
    assert not dist.has_layout()


def test_get_dist_util_sets_up_one_process_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="libai.utils.distributed"):
        layout = dist.get_dist_util()
    assert "Distributed env is not set up" in caplog.text
    assert layout.world_size == 1 and layout.data_parallel_size == 1


def test_set_device_type_replaces_the_layout_device():
    dist.setup_dist_util(DictConfig(dict(device_type="cpu")))
    dist.set_device_type("cpu")
    assert dist.get_dist_util().device_type == "cpu"
    with dist.ParallelLayout.from_config(None, world_size=1, rank=0):
        dist.set_device_type("cpu")
        assert dist.current_layout().device_type == "cpu"


def test_small_helpers():
    dist.setup_dist_util(DictConfig(dict(device_type="cpu")))
    assert dist.same_sbp([flow.sbp.broadcast, flow.sbp.split(0)], [flow.sbp.broadcast, flow.sbp.split(0)])
    assert not dist.same_sbp([flow.sbp.broadcast], [flow.sbp.split(0)])
    with pytest.raises(ValueError, match="lengths 1 and 2"):
        dist.same_sbp([flow.sbp.broadcast], [flow.sbp.broadcast, flow.sbp.broadcast])
    assert dist.get_hidden_sbp() == dist.get_nd_sbp([flow.sbp.split(0), flow.sbp.broadcast])
    assert dist.is_last_process() and dist.get_num_nodes() == 1
    assert dist.broadcast_py_object({"a": [1, 2]}) == {"a": [1, 2]}
    local = flow.ones(2, 3)
    assert dist.tensor_to_rank0(local) is local
    glob = flow.arange(6, dtype=flow.float32).reshape(2, 3).to_global(
        placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.split(0))
    moved = dist.tensor_to_rank0(glob, device="cuda", to_local=True)  # no GPU: stays on the CPU
    assert not moved.is_global and moved.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
