"""One process, global tensors: what LiBai code does with them works, and the local view that ONNX
export uses is complete and leaves the model as it was."""
import numpy as np
import oneflow as flow
import pytest

from libai.data import DistTensorData
from libai.layers import Linear, TransformerLayer
from libai.layers.utils import local_tensors, place_constant
from libai.models import GPTForPreTraining
from libai.utils import distributed as dist

B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)


def test_an_activation_round_trips_through_to_local_and_to_global(local_layout):
    layer = Linear(4, 6, parallel="col")
    x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    out = layer(flow.tensor(x))  # a local input in one process: the full value
    assert out.is_global and out.placement == local_layout.stage_placement(0)
    assert list(out.sbp) == dist.get_nd_sbp([B, S1])  # column-parallel: split over the tensor axis
    local = out.to_local()
    assert not local.is_global and tuple(local.shape) == (3, 6)
    expected = x @ layer.weight.to_local().numpy().T + layer.bias.to_local().numpy()
    np.testing.assert_allclose(local.numpy(), expected, rtol=1e-5, atol=1e-6)
    back = local.to_global(placement=out.placement, sbp=out.sbp)
    np.testing.assert_array_equal(back.numpy(), out.numpy())
    # LiBai's reading of a layer's tensors: ttol/tton give the full value
    np.testing.assert_array_equal(dist.tton(out), local.numpy())
    assert not dist.ttol(layer.weight).is_global


def test_libais_in_place_dist_tensor_data_to_global_needs_no_layout():
    # as in LiBai's inference scripts: no layout was set up; one is, with a warning
    field = DistTensorData(flow.tensor([[3, 1, 2]]))
    assert field.to_global() is None  # LiBai's returns nothing and changes the field
    assert field.tensor.is_global and field.tensor.placement == dist.get_layer_placement(0)
    assert field.sbp == dist.get_nd_sbp([S0, B]) == list(field.tensor.sbp)
    assert field.tensor.to_local().numpy().tolist() == [[3, 1, 2]]
    labels = DistTensorData(flow.tensor([1, 0]), sbp_list=["broadcast", "broadcast"], placement_idx=-1)
    labels.to_global(sbp=[B, B], placement=dist.get_layer_placement(-1))
    assert list(labels.tensor.sbp) == [B, B]


def test_dist_tensor_data_place_leaves_the_field_local(local_layout):
    field = DistTensorData(flow.ones(2, 3))
    placed = field.place(local_layout)
    assert placed.is_global and list(placed.sbp) == [S0, B]
    assert not field.tensor.is_global


def test_the_local_view_is_local_inside_and_the_model_comes_back_unchanged(local_layout):
    model = GPTForPreTraining(dict(vocab_size=32, hidden_size=16, hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=32, max_seq_length=8))
    model.eval()
    params = dict(model.named_parameters())
    layouts = {name: m.layout for name, m in model.named_modules() if hasattr(m, "layout")}
    ids = flow.tensor([[1, 2, 3, 4]])
    expected = model(input_ids=ids)["prediction_scores"].numpy()
    with local_tensors(model) as view:
        assert view is model
        assert not any(p.is_global for p in model.parameters())
        assert not any(t.is_global for t in model.buffers())
        assert all(not m.layout.is_global for m in model.modules() if hasattr(m, "layout"))
        out = model(input_ids=ids)["prediction_scores"]
        assert not out.is_global
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    after = dict(model.named_parameters())
    assert after.keys() == params.keys() and all(after[n] is p for n, p in params.items())
    assert {n: m.layout for n, m in model.named_modules() if hasattr(m, "layout")} == layouts
    assert all(p.is_global for p in model.parameters())


def test_the_local_view_keeps_shared_parameters_shared(local_layout):
    pair = flow.nn.ModuleDict({"a": Linear(4, 4), "b": Linear(4, 4)})
    pair["b"].weight = pair["a"].weight
    with local_tensors(pair):
        assert pair["b"].weight is pair["a"].weight and not pair["a"].weight.is_global
        assert pair["a"].weight.requires_grad
    assert pair["b"].weight is pair["a"].weight and pair["a"].weight.is_global


def test_the_local_view_restores_the_model_after_an_error(local_layout):
    layer = TransformerLayer(8, 16, 2)
    weight = layer.mlp.dense_h_to_4h.weight
    with pytest.raises(RuntimeError, match="inside the view"):
        with local_tensors(layer):
            raise RuntimeError("inside the view")
    assert layer.mlp.dense_h_to_4h.weight is weight and weight.is_global
    assert layer.layout.is_global


def test_a_constant_made_inside_a_graph_becomes_global(local_layout):
    layer = Linear(3, 2)

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def build(self, x):
            shift = place_constant(flow.tensor([1.0, 2.0, 3.0]), local_layout, 0)  # made in lazy mode
            return self.layer(x + shift)

    x = np.random.RandomState(1).randn(2, 3).astype(np.float32)
    got = Step()(local_layout.to_global(flow.tensor(x), [B, B]))
    assert got.is_global
    expected = layer(flow.tensor(x + np.array([1.0, 2.0, 3.0], dtype=np.float32)))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


# --------------------------------------------------- attention's one-process local stretch
def _attention_run(inactive: bool, monkeypatch, **options):
    """Output, cache and every gradient of one attention forward/backward on global tensors,
    with the local stretch as it is or switched off (the global path)."""
    from libai.layers import MultiheadAttention, RotaryEmbedding
    from libai.layers import utils as layer_utils

    entered = []
    if inactive:
        def switched_off(self, layout, like):
            self.active, self.placement = False, None

        monkeypatch.setattr(layer_utils.OneProcessLocal, "__init__", switched_off)
    else:
        enter = layer_utils.OneProcessLocal.enter
        monkeypatch.setattr(layer_utils.OneProcessLocal, "enter",
                            lambda self, t: entered.append(t is not None and t.is_global)
                            or enter(self, t))
    flow.manual_seed(3)
    attn = MultiheadAttention(16, 4, num_key_value_heads=2, bias=False, attn_mask_type="causal",
                              rotary_embedding=RotaryEmbedding(4, 16), **options)
    x = flow.tensor(np.random.RandomState(1).randn(2, 5, 16).astype(np.float32))
    weights = flow.tensor(np.random.RandomState(2).randn(2, 5, 16).astype(np.float32))
    out, cache = attn(x, use_cache=True)
    step, _ = attn(x[:, 4:], past_key_value=cache, use_cache=True)
    (out * weights.to_global(placement=out.placement, sbp=out.sbp)).sum().backward()
    grads = {name: p.grad.numpy() for name, p in attn.named_parameters()}
    monkeypatch.undo()
    assert any(entered) != inactive  # the stretch ran (or, switched off, did not)
    return out, cache, step, grads


@pytest.mark.parametrize("qk_norm", [False, True])
def test_attention_works_on_local_heads_in_one_process_and_gives_the_global_paths_numbers(
        local_layout, monkeypatch, qk_norm):
    """In one process the attention core runs on local tensors (views instead of copies): the
    output, the cache and the gradients must equal the global path's, and what the layer hands
    back must be global with the SBP the global path gives it."""
    options = dict(qk_norm_eps=1e-6) if qk_norm else {}
    out, cache, step, grads = _attention_run(False, monkeypatch, **options)
    ref_out, ref_cache, ref_step, ref_grads = _attention_run(True, monkeypatch, **options)
    for got, ref in [(out, ref_out), (step, ref_step), *zip(cache, ref_cache)]:
        assert got.is_global and got.placement == ref.placement
        assert list(got.sbp) == list(ref.sbp)
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    assert sorted(grads) == sorted(ref_grads) and (not qk_norm or "query_norm.weight" in grads)
    for name in grads:
        np.testing.assert_allclose(grads[name], ref_grads[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_local_stretch_is_off_with_several_processes_and_on_local_tensors(local_layout):
    from libai.layers.utils import OneProcessLocal

    x = flow.ones(2, 3).to_global(placement=local_layout.stage_placement(0), sbp=[B, B])
    stretch = OneProcessLocal(local_layout, x)
    assert stretch.active and not stretch.enter(x).is_global
    assert list(stretch.leave(stretch.enter(x), [B, S1]).sbp) == [B, S1]
    two_processes = dist.ParallelLayout(data_parallel_size=2, world_size=2)
    off = OneProcessLocal(two_processes, x)
    assert not off.active and off.enter(x) is x
    assert not OneProcessLocal(local_layout, flow.ones(2)).active
