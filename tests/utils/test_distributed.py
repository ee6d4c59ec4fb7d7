"""ParallelLayout: sizes resolved against the world, errors that say what to launch, stages of
layers, which rank is which, and the logical [data, tensor] SBP against the placements' own.

Everything here is computed from ``world_size``/``rank`` given explicitly, in one process; the
multi-process consequences are tested in tests/parallel, tests/layers and tests/models.
"""
import oneflow as flow
import pytest

from libai.utils import distributed as dist
from libai.utils.distributed import ParallelLayout

B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)


def layout(world_size=1, rank=0, **sizes):
    sizes.setdefault("device_type", "cpu")
    return ParallelLayout.from_config(sizes, world_size=world_size, rank=rank)


# --------------------------------------------------------------------------------- sizes
def test_data_parallel_size_takes_what_the_other_two_leave():
    got = layout(world_size=8, tensor_parallel_size=2, pipeline_parallel_size=2)
    assert (got.data_parallel_size, got.tensor_parallel_size, got.pipeline_parallel_size) == (2, 2, 2)
    assert layout(world_size=4).data_parallel_size == 4


def test_a_world_the_sizes_do_not_divide_names_the_numbers_and_the_fix():
    with pytest.raises(ValueError, match=r"world size 2 is not divisible by tensor_parallel_size \(4\).*"
                                         r"launch a multiple of 4 processes"):
        layout(world_size=2, tensor_parallel_size=4)


def test_sizes_whose_product_is_not_the_world_size_are_refused():
    with pytest.raises(ValueError, match=r"\(2\) × .*\(2\) × .*\(1\) = 4, but the launch has 2 process"):
        layout(world_size=2, data_parallel_size=2, tensor_parallel_size=2)


@pytest.mark.parametrize("key", ["data_parallel_size", "tensor_parallel_size", "pipeline_parallel_size"])
def test_sizes_below_one_are_refused(key):
    with pytest.raises(ValueError, match=key.replace("_size", "") + "_size must be >= 1"):
        layout(world_size=1, **{key: 0})


def test_an_unknown_device_type_lists_the_choices():
    with pytest.raises(ValueError, match="'cpu' or 'cuda', got 'tpu'"):
        layout(device_type="tpu")


# --------------------------------------------------------------------------------- stages
@pytest.mark.parametrize("num_layers,expected", [(4, (0, 0, 1, 1)), (5, (0, 0, 0, 1, 1)), (2, (0, 1))])
def test_layers_are_spread_evenly_earlier_stages_taking_the_remainder(num_layers, expected):
    got = layout(world_size=2, pipeline_parallel_size=2, pipeline_num_layers=num_layers)
    assert got.stage_of_each_layer == expected
    assert got.layer_stage(-1) == 1 and got.layer_stage(0) == 0


def test_custom_stages_are_taken_as_given_and_checked():
    got = layout(world_size=2, pipeline_parallel_size=2, custom_pipeline_stage_id=[0, 0, 0, 1])
    assert got.stage_of_each_layer == (0, 0, 0, 1)
    with pytest.raises(ValueError, match="non-decreasing"):
        layout(world_size=2, pipeline_parallel_size=2, custom_pipeline_stage_id=[0, 1, 0])
    with pytest.raises(ValueError, match=r"stage ids \[2\] outside 0..1"):
        layout(world_size=2, pipeline_parallel_size=2, custom_pipeline_stage_id=[0, 2])
    with pytest.raises(ValueError, match="has 2 entries but pipeline_num_layers is 3"):
        layout(world_size=2, pipeline_parallel_size=2, pipeline_num_layers=3, custom_pipeline_stage_id=[0, 1])


def test_pipeline_stages_need_the_number_of_layers():
    got = layout(world_size=2, pipeline_parallel_size=2)
    with pytest.raises(ValueError, match="needs train.dist.pipeline_num_layers"):
        got.layer_stage(0)
    with pytest.raises(ValueError, match="smaller than pipeline_parallel_size"):
        layout(world_size=4, pipeline_parallel_size=4, pipeline_num_layers=3)


def test_a_layer_index_outside_the_model_is_an_index_error():
    got = layout(world_size=2, pipeline_parallel_size=2, pipeline_num_layers=4)
    with pytest.raises(IndexError, match="layer_idx 4 is outside the 4 layers"):
        got.layer_stage(4)


# --------------------------------------------------------------------------------- ranks
def test_ranks_are_stage_major_then_data_then_tensor():
    seen = []
    for rank in range(8):
        got = layout(world_size=8, rank=rank, tensor_parallel_size=2, pipeline_parallel_size=2,
                     pipeline_num_layers=2)
        seen.append((got.stage, got.data_parallel_rank, got.tensor_parallel_rank))
    assert seen == [(s, d, t) for s in range(2) for d in range(2) for t in range(2)]


@pytest.mark.parametrize(
    "sizes,world,axes,stage0,stage1",
    [
        (dict(tensor_parallel_size=2, pipeline_parallel_size=2), 8, (0, 1), [[0, 1], [2, 3]], [[4, 5], [6, 7]]),
        (dict(pipeline_parallel_size=2), 4, (0,), [0, 1], [2, 3]),  # data parallel only: 1-D
        (dict(tensor_parallel_size=2, pipeline_parallel_size=2), 4, (0, 1), [[0, 1]], [[2, 3]]),
        (dict(pipeline_parallel_size=2), 2, (0, 1), [[0]], [[1]]),  # one rank per stage
    ],
    ids=["dp2xtp2", "dp2", "tp2", "single"],
)
def test_only_pure_data_parallel_stages_have_a_1d_placement(sizes, world, axes, stage0, stage1):
    got = layout(world_size=world, pipeline_num_layers=2, **sizes)
    assert got.placement_axes == axes
    assert got.stage_ranks(0) == stage0 and got.stage_ranks(-1) == stage1
    assert got.stage_placement(1) == flow.placement("cpu", ranks=stage1)


def test_a_stage_that_does_not_exist_is_an_index_error():
    with pytest.raises(IndexError, match="pipeline stage 2 does not exist; there are 2 stages"):
        layout(world_size=2, pipeline_parallel_size=2).stage_ranks(2)


# --------------------------------------------------------------------------------- SBP
def test_the_logical_pair_maps_to_the_placement_axes_and_back():
    both = layout(world_size=4, tensor_parallel_size=2)
    data = layout(world_size=2)
    tensor = layout(world_size=2, tensor_parallel_size=2)
    assert both.nd_sbp(S0, S1) == [S0, S1]
    assert data.nd_sbp(S0, S1) == [S0]
    assert tensor.nd_sbp(S0, S1) == [S0, S1]
    assert data.nd_sbp() == [B] and both.nd_sbp() == [B, B]
    for got in (both, data, tensor):
        logical = got.logical_sbp(got.nd_sbp(S0, S1))
        # what the placement keeps comes back; a dropped axis comes back as broadcast
        assert logical == [S0 if 0 in got.placement_axes else B, S1 if 1 in got.placement_axes else B]


def test_an_sbp_of_the_wrong_number_of_axes_is_a_clear_error():
    with pytest.raises(ValueError, match=r"2-axis SBP .* placements, which have 1 axis"):
        layout(world_size=2).logical_sbp([S0, B])
    with pytest.raises(ValueError, match=r"\[over data parallel, over tensor parallel\], got 1 item"):
        layout(world_size=1).to_global(flow.zeros(2), [S0])


def test_get_nd_sbp_answers_for_the_current_layout():
    with layout(world_size=2):
        assert dist.get_nd_sbp([S0, S1]) == [S0]
    with layout(world_size=2, tensor_parallel_size=2):
        assert dist.get_nd_sbp([S0, S1]) == [S0, S1]
        with pytest.raises(ValueError, match="got 1 items"):
            dist.get_nd_sbp([S0])
    # no layout at all: as in LiBai, a one-process layout is set up (with a warning)
    dist.reset_layouts()
    assert dist.get_nd_sbp([S0, B]) == [S0, B]
    assert dist.current_layout().world_size == 1
    dist.reset_layouts()


def test_a_one_process_layout_makes_global_tensors_on_one_rank():
    got = layout()
    assert got.is_global
    moved = got.to_global(flow.ones(3), [S0, B])
    assert moved.is_global and moved.placement == flow.placement("cpu", ranks=[[0]])
    assert tuple(moved.sbp) == (S0, B)
    assert moved.to_local().numpy().tolist() == [1.0, 1.0, 1.0]


def test_only_a_one_process_layout_has_a_local_copy():
    local = layout().local_copy()
    assert not local.is_global and local.local_tensors
    moved = local.to_global(flow.ones(3), [S0, B])
    assert not moved.is_global and moved.device == flow.device("cpu")
    with pytest.raises(ValueError, match="2 processes has no local copy"):
        layout(world_size=2).local_copy()
    with pytest.raises(ValueError, match="needs a one-process layout"):
        ParallelLayout(world_size=2, data_parallel_size=2, local_tensors=True)
