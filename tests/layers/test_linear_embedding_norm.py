"""Single-process behaviour of Linear, the embeddings, LayerNorm, activations and placement
helpers, checked against NumPy references."""
import math

import numpy as np
import oneflow as flow
import pytest

from libai.layers import (
    Embedding, LayerNorm, Linear, VocabEmbedding, build_activation, gelu_tanh, quick_gelu,
)
from libai.layers.utils import make_parameter, skip_weight_init, to_layer
from libai.utils.distributed import ParallelLayout


def _x(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def test_skip_weight_init_draws_nothing_and_ends_with_its_block(local_layout):
    flow.manual_seed(3)
    reference = Linear(6, 4).weight.numpy()  # the first draw after the seed
    flow.manual_seed(3)
    with skip_weight_init():
        with skip_weight_init():  # nesting keeps skipping until the outermost block ends
            Embedding(50, 8)
        skipped = Linear(6, 4)
    assert tuple(skipped.weight.shape) == (4, 6)
    # nothing was drawn inside the block: the next layer gets the seed's first draw
    np.testing.assert_array_equal(Linear(6, 4).weight.numpy(), reference)


@pytest.mark.parametrize("parallel", ["data", "col", "row"])
def test_linear_computes_affine_map(local_layout, parallel):
    layer = Linear(5, 3, parallel=parallel)
    nn_bias = np.random.RandomState(1).randn(3).astype(np.float32)
    layer.bias.data.copy_(nn_bias)  # zero by default: give it a value to check
    x = _x(2, 4, 5)
    expected = x @ layer.weight.numpy().T + nn_bias
    np.testing.assert_allclose(layer(flow.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert layer.layer_idx == 0 and layer.layout is local_layout


def test_linear_skip_bias_add_returns_bias_separately(local_layout):
    layer = Linear(4, 6, skip_bias_add=True)
    out, bias = layer(flow.tensor(_x(3, 4)))
    np.testing.assert_allclose(out.numpy(), _x(3, 4) @ layer.weight.numpy().T, rtol=1e-5, atol=1e-6)
    assert bias is layer.bias
    assert np.all(bias.numpy() == 0)


def test_linear_without_bias(local_layout):
    layer = Linear(4, 2, bias=False)
    assert layer.bias is None
    np.testing.assert_allclose(
        layer(flow.tensor(_x(3, 4))).numpy(), _x(3, 4) @ layer.weight.numpy().T, rtol=1e-5, atol=1e-6
    )


def test_linear_rejects_unknown_parallel_mode(local_layout):
    with pytest.raises(ValueError, match="not a parallel mode.*'data', 'col', 'row'"):
        Linear(4, 4, parallel="column")


def test_linear_rejects_sizes_the_tensor_parallel_size_does_not_divide():
    layout = ParallelLayout.from_config({"tensor_parallel_size": 2, "device_type": "cpu"}, world_size=2, rank=0)
    with layout:
        with pytest.raises(ValueError, match="out_features=5 over tensor_parallel_size=2"):
            Linear(4, 5, parallel="col")
        with pytest.raises(ValueError, match="in_features=3 over tensor_parallel_size=2"):
            Linear(3, 4, parallel="row")
        with pytest.raises(ValueError, match="num_embeddings=7 over tensor_parallel_size=2"):
            VocabEmbedding(7, 4)


def test_layers_need_an_active_layout():
    with pytest.raises(RuntimeError, match="no parallel layout is active"):
        Linear(2, 2)


def test_local_tensor_in_a_multi_process_layout_is_a_clear_error():
    layout = ParallelLayout.from_config({"data_parallel_size": 2, "device_type": "cpu"}, world_size=2, rank=0)
    with pytest.raises(ValueError, match="inputs must be global tensors.*Instance.to_global"):
        to_layer(flow.ones(2, 3), layout, 0)


def test_init_follows_the_seed(local_layout):
    def draw(seed):
        flow.manual_seed(seed)
        return make_parameter((4, 3), flow.nn.init.normal_, local_layout, 0).numpy()

    np.testing.assert_array_equal(draw(3), draw(3))
    assert not np.allclose(draw(3), draw(4))


@pytest.mark.parametrize("cls", [VocabEmbedding, Embedding])
def test_embedding_looks_up_rows(local_layout, cls):
    table = cls(10, 4, padding_idx=2)
    ids = np.array([[1, 2, 9], [0, 0, 5]])
    out = table(flow.tensor(ids)).numpy()
    np.testing.assert_array_equal(out, table.weight.numpy()[ids])
    assert np.all(table.weight.numpy()[2] == 0), "padding row must start at zero"
    assert np.any(table.weight.numpy()[1] != 0)


def test_embedding_rejects_out_of_range_padding_idx(local_layout):
    with pytest.raises(ValueError, match="padding_idx=12 is outside the table of 10"):
        VocabEmbedding(10, 4, padding_idx=12)


@pytest.mark.parametrize("affine, bias", [(True, True), (True, False), (False, False)])
def test_layernorm_matches_numpy(local_layout, affine, bias):
    norm = LayerNorm(6, eps=1e-5, elementwise_affine=affine, bias=bias)
    assert (norm.weight is not None, norm.bias is not None) == (affine, bias)
    if affine:
        norm.weight.data.copy_(_x(6, seed=3))
    if bias:
        norm.bias.data.copy_(_x(6, seed=4))
    x = _x(2, 3, 6)
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-5)
    if affine:
        expected = expected * _x(6, seed=3)
    if bias:
        expected = expected + _x(6, seed=4)
    np.testing.assert_allclose(norm(flow.tensor(x)).numpy(), expected, rtol=1e-4, atol=1e-5)


def test_activations_match_their_formulas():
    x = _x(50)
    erf = np.vectorize(math.erf)
    exact = 0.5 * x * (1 + erf(x / math.sqrt(2)))
    np.testing.assert_allclose(build_activation("gelu")(flow.tensor(x)).numpy(), exact, rtol=1e-4, atol=1e-5)
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(gelu_tanh(flow.tensor(x)).numpy(), tanh, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(quick_gelu(flow.tensor(x)).numpy(), x / (1 + np.exp(-1.702 * x)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(build_activation("relu")(flow.tensor(x)).numpy(), np.maximum(x, 0))
    np.testing.assert_array_equal(build_activation(None)(flow.tensor(x)).numpy(), x)


def test_unknown_activation_lists_the_choices():
    with pytest.raises(ValueError, match="unknown activation 'gleu'; choose one of .*'gelu'"):
        build_activation("gleu")
