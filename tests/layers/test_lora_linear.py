"""LoRALinear against NumPy: the update formula, zero start, frozen base, merge/unmerge."""
import numpy as np
import oneflow as flow
import pytest

from libai.layers import Conv1D, Linear, LoRALinear


def _np(t):
    return t.detach().numpy()


def _set(param, array):
    with flow.no_grad():
        param.copy_(np.asarray(array, dtype=np.float32))


@pytest.fixture
def x():
    return flow.tensor(np.random.RandomState(0).randn(2, 3, 6), dtype=flow.float32)


@pytest.mark.parametrize("parallel", ["col", "row", "data"])
def test_fresh_adapter_computes_the_base_layer(local_layout, x, parallel):
    base = Linear(6, 4, parallel=parallel)
    expected = _np(x) @ _np(base.weight).T + _np(base.bias)
    lora = LoRALinear.from_linear(base, rank=2, alpha=4)
    np.testing.assert_allclose(_np(lora(x)), expected, rtol=1e-6, atol=1e-6)
    assert np.all(_np(lora.lora_B.weight) == 0)  # B starts at zero
    assert np.any(_np(lora.lora_A.weight) != 0)


@pytest.mark.parametrize("cls", [Linear, Conv1D])
def test_update_is_scaled_low_rank_product(local_layout, x, cls):
    rng = np.random.RandomState(1)
    lora = LoRALinear.from_linear(cls(6, 4), rank=3, alpha=6)
    a, b = rng.randn(3, 6), rng.randn(4, 3)
    _set(lora.lora_A.weight, a)
    _set(lora.lora_B.weight, b)
    w = _np(lora.weight)
    w = w.T if cls is Conv1D else w  # Conv1D stores [in, out]
    expected = _np(x) @ w.T + _np(lora.bias) + 2.0 * (_np(x) @ a.T @ b.T)
    np.testing.assert_allclose(_np(lora(x)), expected, rtol=1e-5, atol=1e-5)


def test_base_is_shared_frozen_and_keeps_its_names(local_layout, x):
    base = Linear(6, 4)
    lora = LoRALinear.from_linear(base, rank=2)
    assert lora.weight is base.weight and lora.bias is base.bias
    assert list(lora.state_dict()) == ["weight", "bias", "lora_A.weight", "lora_B.weight"]
    assert not lora.weight.requires_grad and not lora.bias.requires_grad
    _set(lora.lora_B.weight, np.ones((4, 2)))
    lora(x).sum().backward()
    assert lora.weight.grad is None and lora.bias.grad is None
    assert float(lora.lora_A.weight.grad.abs().sum()) > 0
    assert float(lora.lora_B.weight.grad.abs().sum()) > 0


@pytest.mark.parametrize("cls", [Linear, Conv1D])
def test_merge_gives_the_unmerged_outputs_and_unmerge_restores(local_layout, x, cls):
    lora = LoRALinear.from_linear(cls(6, 4), rank=2)
    _set(lora.lora_B.weight, np.random.RandomState(2).randn(4, 2))
    before_w, before_y = _np(lora.weight).copy(), _np(lora(x))
    lora.merge()
    assert lora.merged
    assert not np.allclose(_np(lora.weight), before_w)
    np.testing.assert_allclose(_np(lora(x)), before_y, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="already merged"):
        lora.merge()
    lora.unmerge()
    np.testing.assert_allclose(_np(lora.weight), before_w, atol=1e-6)
    np.testing.assert_allclose(_np(lora(x)), before_y, rtol=1e-5, atol=1e-5)


def test_skip_bias_add_returns_the_bias_apart(local_layout, x):
    lora = LoRALinear.from_linear(Linear(6, 4, skip_bias_add=True), rank=2, alpha=2)
    _set(lora.bias, np.arange(4.0))
    _set(lora.lora_B.weight, np.ones((4, 2)))
    y, bias = lora(x)
    assert bias is lora.bias
    a = _np(lora.lora_A.weight)
    expected = _np(x) @ _np(lora.weight).T + _np(x) @ a.T @ np.ones((2, 4))
    np.testing.assert_allclose(_np(y), expected, rtol=1e-5, atol=1e-5)


def test_wrapping_errors_name_the_fix(local_layout):
    with pytest.raises(TypeError, match="libai.layers.Linear"):
        LoRALinear.from_linear(flow.nn.Linear(6, 4))
    lora = LoRALinear.from_linear(Linear(6, 4))
    with pytest.raises(ValueError, match="apply LoRA once"):
        LoRALinear.from_linear(lora)
    with pytest.raises(ValueError, match="rank must be >= 1"):
        LoRALinear.from_linear(Linear(6, 4), rank=0)
    with pytest.raises(RuntimeError, match="not merged"):
        lora.unmerge()
