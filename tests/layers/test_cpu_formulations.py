"""The CPU formulations libai uses in place of slow OneFlow kernels compute what those kernels
compute: the vocabulary cross entropy (against ``sparse_softmax_cross_entropy`` and a float64
log-sum-exp) and the affine layer norm with its written-out gradient (against OneFlow's
composite ``nn.functional.layer_norm``), in Eager and inside an ``nn.Graph``."""
import numpy as np
import oneflow as flow
import pytest

from libai.layers import LayerNorm, ParallelCrossEntropyLoss
from libai.layers import cross_entropy as cross_entropy_module
from libai.layers.layer_norm import _affine_layer_norm


def _x(*shape, seed=0, scale=1.0):
    return (np.random.RandomState(seed).randn(*shape) * scale).astype(np.float32)


def _loss_and_grad(fn, logits, target, weights):
    x = flow.tensor(logits, requires_grad=True)
    loss = fn(x, flow.tensor(target))
    (loss * flow.tensor(weights)).sum().backward()
    return loss.numpy(), x.grad.numpy()


@pytest.mark.parametrize("scale", [1.0, 30.0, 300.0])
def test_cross_entropy_matches_oneflows_kernel_and_float64(scale):
    # at scale 300 most targets' probabilities underflow to 0 in float32: the value must still be
    # the log-sum-exp one, as OneFlow's kernel gives, not inf
    logits, target = _x(64, 500, scale=scale), np.random.RandomState(1).randint(0, 500, 64)
    weights = np.random.RandomState(2).rand(64).astype(np.float32)
    ours, our_grad = _loss_and_grad(cross_entropy_module._cpu_softmax_cross_entropy, logits, target, weights)
    theirs, their_grad = _loss_and_grad(flow._C.sparse_softmax_cross_entropy, logits, target, weights)
    wide = logits.astype(np.float64)
    top = wide.max(-1, keepdims=True)
    lse = np.log(np.exp(wide - top).sum(-1)) + top[:, 0]
    expected = lse - wide[np.arange(64), target]
    assert np.isfinite(ours).all()
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(our_grad, their_grad, rtol=0, atol=1e-7)
    if scale == 300.0:
        probs = np.exp(wide - top) / np.exp(wide - top).sum(-1, keepdims=True)
        assert (probs[np.arange(64), target].astype(np.float32) == 0).sum() > 30


def test_cross_entropy_with_masked_out_logits():
    # a vocabulary entry masked with -inf has probability 0 and gradient 0, as in OneFlow's op
    logits, target = _x(6, 9, seed=5), np.array([0, 3, 8, 2, 2, 5])
    logits[:, 4] = -np.inf
    logits[1, 7] = -np.inf
    weights = np.ones(6, dtype=np.float32)
    ours, our_grad = _loss_and_grad(cross_entropy_module._cpu_softmax_cross_entropy, logits, target, weights)
    theirs, their_grad = _loss_and_grad(flow._C.sparse_softmax_cross_entropy, logits, target, weights)
    assert np.isfinite(ours).all() and np.isfinite(our_grad).all()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(our_grad, their_grad, atol=1e-7)
    assert np.all(our_grad[:, 4] == 0)


def test_the_loss_layer_uses_it_on_the_cpu_with_the_ignored_index(local_layout, monkeypatch):
    calls = []
    original = cross_entropy_module._cpu_softmax_cross_entropy

    def spy(logits, target):
        calls.append(tuple(logits.shape))
        return original(logits, target)

    monkeypatch.setattr(cross_entropy_module, "_cpu_softmax_cross_entropy", spy)
    logits, target = _x(2, 5, 11, seed=3), np.array([[1, 10, -100, 4, 0], [3, -100, 2, 2, 9]])
    x = flow.tensor(logits, requires_grad=True)
    loss = ParallelCrossEntropyLoss()(x, flow.tensor(target))
    loss.sum().backward()
    assert calls == [(10, 11)]
    flat_target = np.where(target == -100, 0, target).reshape(-1)
    reference = flow.tensor(logits.reshape(10, 11), requires_grad=True)
    expected = flow._C.sparse_softmax_cross_entropy(reference, flow.tensor(flat_target))
    expected = expected * flow.tensor((target != -100).reshape(-1).astype(np.float32))
    expected.sum().backward()
    np.testing.assert_allclose(loss.numpy().reshape(-1), expected.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy().reshape(10, 11), reference.grad.numpy(), atol=1e-7)
    assert np.all(x.grad.numpy()[0, 2] == 0) and np.all(x.grad.numpy()[1, 1] == 0)


def _composite_and_ours(shape, normalized, seed):
    x, dy = _x(*shape, seed=seed, scale=3.0) + 1.0, _x(*shape, seed=seed + 1)
    weight, bias = _x(*normalized, seed=seed + 2), _x(*normalized, seed=seed + 3)
    results = []
    for fn in (
        lambda a, w, b: flow.nn.functional.layer_norm(a, normalized, w, b, 1e-5),
        lambda a, w, b: _affine_layer_norm(1e-5).apply(a, w, b),
    ):
        tensors = [flow.tensor(v, requires_grad=True) for v in (x, weight, bias)]
        out = fn(*tensors)
        (out * flow.tensor(dy)).sum().backward()
        results.append([out.numpy()] + [t.grad.numpy() for t in tensors])
    return results


@pytest.mark.parametrize("shape, normalized", [((4, 7, 16), (16,)), ((3, 5, 4, 6), (4, 6))])
def test_layer_norm_gradient_matches_oneflows_composite(shape, normalized):
    theirs, ours = _composite_and_ours(shape, normalized, seed=4)
    for name, a, b in zip(("out", "dx", "dweight", "dbias"), ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=name)


def test_layer_norm_in_a_graph_equals_eager(local_layout):
    norm = LayerNorm(16)
    norm.weight.data.copy_(_x(16, seed=7))
    norm.bias.data.copy_(_x(16, seed=8))
    whole = [flow.sbp.broadcast, flow.sbp.broadcast]
    x = local_layout.to_global(flow.tensor(_x(4, 3, 16, seed=9, scale=2.0)), whole)
    dy = local_layout.to_global(flow.tensor(_x(4, 3, 16, seed=10)), whole)
    eager = (norm(x) * dy).sum()
    eager.backward()
    eager_grads = [norm.weight.grad.numpy().copy(), norm.bias.grad.numpy().copy()]
    norm.weight.grad, norm.bias.grad = None, None
    before = [norm.weight.numpy().copy(), norm.bias.numpy().copy()]

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.norm = norm
            self.add_optimizer(flow.optim.SGD(norm.parameters(), lr=1.0))

        def build(self, x, dy):
            loss = (self.norm(x) * dy).sum()
            loss.backward()
            return loss

    graph_loss = Step()(x, dy)
    np.testing.assert_allclose(graph_loss.numpy(), eager.numpy(), rtol=1e-6)
    # one SGD step of lr 1: the parameters moved by exactly minus the eager gradients
    after = [norm.weight.numpy(), norm.bias.numpy()]
    for b, a, g in zip(before, after, eager_grads):
        np.testing.assert_allclose(b - a, g, rtol=1e-5, atol=1e-6)


def test_layer_norm_without_gradient_gives_the_same_bits(local_layout):
    """Under ``no_grad`` (generation) the layer runs the written-out forward without
    ``autograd.Function``; the values must be those of the recorded path, bit for bit."""
    from libai.layers.utils import local_tensors

    norm = LayerNorm(24)
    norm.weight.data.copy_(_x(24, seed=11))
    norm.bias.data.copy_(_x(24, seed=12))
    x = flow.tensor(_x(3, 5, 24, seed=13, scale=4.0) + 2.0)
    with local_tensors(norm):
        recorded = norm(x)
        with flow.no_grad():
            free = norm(x)
    assert recorded.requires_grad and not free.requires_grad
    np.testing.assert_array_equal(free.numpy(), recorded.numpy())


@pytest.mark.parametrize("shape", [(1, 1, 512), (3, 5, 24), (2, 4, 3, 64)])
def test_trailing_mean_matches_oneflows_reduction_forward_and_backward(shape):
    """The norms' mean over the last dim of a local CPU tensor is a matrix-vector product (a
    column of 1/width); it must equal OneFlow's ``mean`` to float32 rounding, gradient too."""
    from libai.layers.layer_norm import trailing_mean

    x, dy = _x(*shape, seed=21, scale=3.0) + 1.5, _x(*shape[:-1], 1, seed=22)
    results = []
    for fn in (trailing_mean, lambda t, dims: t.mean(dim=dims, keepdim=True)):
        t = flow.tensor(x, requires_grad=True)
        out = fn(t, [len(shape) - 1])
        (out * flow.tensor(dy)).sum().backward()
        results.append((out.numpy(), t.grad.numpy()))
    (ours, our_grad), (theirs, their_grad) = results
    assert ours.shape == theirs.shape == shape[:-1] + (1,)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-6, atol=1e-9)


def test_trailing_mean_takes_the_product_only_where_it_is_meant_to(local_layout, monkeypatch):
    """Float32 CPU tensors over their last dim take the product, global ones included (with the
    global result equal to the local one); another dim or dtype keeps OneFlow's reduction."""
    from libai.layers import layer_norm

    calls = []
    for name in ("_mean_column", "_global_mean_column"):
        original = getattr(layer_norm, name)
        monkeypatch.setattr(layer_norm, name,
                            lambda *a, _f=original, _n=name: calls.append(_n) or _f(*a))
    x = flow.tensor(_x(2, 3, 8, seed=23))
    local = layer_norm.trailing_mean(x, [2])
    assert calls == ["_mean_column"]
    layer_norm.trailing_mean(x, [1])
    layer_norm.trailing_mean(x.to(flow.float64), [2])
    assert calls == ["_mean_column"]
    whole = [flow.sbp.broadcast, flow.sbp.broadcast]
    placed = layer_norm.trailing_mean(local_layout.to_global(x, whole), [2])
    assert calls == ["_mean_column", "_global_mean_column"]
    np.testing.assert_array_equal(placed.numpy(), local.numpy())


def test_few_row_product_by_weight_rows_matches_linear_forward_and_backward(local_layout,
                                                                            monkeypatch):
    """Decoding on local tensors, a Linear narrowing its input 4-fold computes ``x Wᵀ`` as
    ``(W xᵀ)ᵀ`` for 2-32 rows: the values and gradients must be those of ``F.linear``."""
    from libai.layers import Linear
    from libai.layers import linear as linear_module
    from libai.layers.utils import local_tensors

    taken = []
    original = linear_module._product_by_weight_rows
    monkeypatch.setattr(linear_module, "_product_by_weight_rows",
                        lambda x, w: taken.append(tuple(x.shape)) or original(x, w))
    layer = Linear(64, 16, parallel="row")
    layer.weight.data.copy_(_x(16, 64, seed=31))
    layer.bias.data.copy_(_x(16, seed=32))
    x_value, dy = _x(8, 1, 64, seed=33), _x(8, 1, 16, seed=34)
    with local_tensors(layer):
        results = []
        for fn in (layer, lambda t: flow.nn.functional.linear(t, layer.weight, layer.bias)):
            layer.weight.grad = None
            x = flow.tensor(x_value, requires_grad=True)
            out = fn(x)
            (out * flow.tensor(dy)).sum().backward()
            results.append((out.numpy(), x.grad.numpy(), layer.weight.grad.numpy()))
        layer(flow.tensor(x_value[:1]))  # one row: OneFlow's product (routed to GEMV)
    assert taken == [(8, 1, 64)]
    for name, ours, theirs in zip(("out", "dx", "dweight"), *results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6, err_msg=name)


def test_the_global_mean_column_made_first_inside_a_graph_serves_the_next_graph(local_layout):
    """The column is cached: made for the first time during a graph's build, it must still be
    an eager tensor that a second graph (and eager code) can take in."""
    from libai.layers import layer_norm

    layer_norm._global_mean_column.cache_clear()
    whole = [flow.sbp.broadcast, flow.sbp.broadcast]
    x = local_layout.to_global(flow.tensor(_x(2, 3, 40, seed=41)), whole)

    class Mean(flow.nn.Graph):
        def build(self, t):
            return layer_norm.trailing_mean(t, [2])

    expected = x.mean(dim=[2], keepdim=True).numpy()
    for _ in range(2):
        np.testing.assert_allclose(Mean()(x).numpy(), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(layer_norm.trailing_mean(x, [2]).numpy(), expected,
                               rtol=1e-6, atol=1e-7)
