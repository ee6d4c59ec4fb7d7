"""LossKeyCompose and the weighted losses: values against numpy, input selection, errors."""
import numpy as np
import pytest

import oneflow as flow
from libai.config.registry import LOSS_REGISTRY, RegistryError
from libai.layers.loss_compose import LossInputError, LossKeyCompose
from libai.layers.weighted_loss import L1Loss, MSELoss, SmoothL1Loss

LOGITS = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]], dtype=np.float32)
LABELS = np.array([1, 2], dtype=np.int64)
PRED = np.array([[0.5, 1.5], [2.0, -1.0]], dtype=np.float32)
TARGET = np.array([[1.0, 1.0], [0.0, 0.0]], dtype=np.float32)


def _outputs():
    return {
        "logits": flow.tensor(LOGITS), "labels": flow.tensor(LABELS),
        "pred": flow.tensor(PRED), "target": flow.tensor(TARGET),
    }


def _cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_prob = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_prob[np.arange(len(labels)), labels].mean()


def test_each_key_is_the_weighted_sum_of_its_losses():
    compose = LossKeyCompose({
        "loss1": [dict(name="CrossEntropyLoss", param=dict(lambda_weight=10.0),
                       input_name=["logits", "labels"])],
        "loss2": [dict(name="L1Loss", param=dict(lambda_weight=1.0), input_name=["pred", "target"]),
                  dict(name="MSELoss", param=dict(lambda_weight=0.5))],  # default: pred, target
    })
    result = compose(_outputs())
    assert sorted(result) == ["loss1", "loss2"]
    np.testing.assert_allclose(result["loss1"].numpy(), 10.0 * _cross_entropy(LOGITS, LABELS), rtol=1e-5)
    expected2 = np.abs(PRED - TARGET).mean() + 0.5 * ((PRED - TARGET) ** 2).mean()
    np.testing.assert_allclose(result["loss2"].numpy(), expected2, rtol=1e-5)


def test_gradients_carry_the_weights():
    pred = flow.tensor(PRED, requires_grad=True)
    compose = LossKeyCompose({"l_loss": dict(name="MSELoss", param=dict(lambda_weight=3.0))})
    compose({"pred": pred, "target": flow.tensor(TARGET)})["l_loss"].backward()
    np.testing.assert_allclose(pred.grad.numpy(), 3.0 * 2 * (PRED - TARGET) / PRED.size, rtol=1e-5)


def test_loss_arguments_inside_param_or_beside_name():
    a = LossKeyCompose({"loss": [dict(name="SmoothL1Loss", param=dict(beta=0.5, lambda_weight=2.0))]})
    b = LossKeyCompose({"loss": [dict(name="SmoothL1Loss", beta=0.5, lambda_weight=2.0)]})
    d = np.abs(PRED - TARGET)
    expected = 2.0 * np.where(d < 0.5, 0.5 * d ** 2 / 0.5, d - 0.25).mean()
    for compose in (a, b):
        np.testing.assert_allclose(compose(_outputs())["loss"].numpy(), expected, rtol=1e-5)
    assert LossKeyCompose(a).config == a.config  # a LossKeyCompose is accepted and rebuilt


def test_missing_output_names_the_key_and_the_available_outputs():
    compose = LossKeyCompose({"loss2": [dict(name="L1Loss", input_name=["pred", "gt"])]})
    with pytest.raises(LossInputError) as info:
        compose({"pred": flow.tensor(PRED), "target": flow.tensor(TARGET)})
    assert str(info.value) == (
        "LossKeyCompose: loss loss2[0] (L1Loss) reads the output 'gt', which is not among the "
        "model outputs ('pred', 'target'). Set its input_name to outputs the model passes in, "
        "or have the model add 'gt' to the dict it hands to the loss"
    )


def test_keys_without_loss_and_unknown_losses_are_rejected():
    with pytest.raises(ValueError, match="key 'pixel' does not contain 'loss'.*'pixel_loss'"):
        LossKeyCompose({"pixel": [dict(name="L1Loss")]})
    with pytest.raises(RegistryError, match="no 'L1Los' in the LOSS registry; did you mean 'L1Loss'"):
        LossKeyCompose({"loss": [dict(name="L1Los")]})
    with pytest.raises(ValueError, match="has no losses"):
        LossKeyCompose({"loss": []})


def test_weighted_wrappers_alone_apply_their_weight():
    pred, target = flow.tensor(PRED), flow.tensor(TARGET)
    np.testing.assert_allclose(L1Loss(lambda_weight=4.0)(pred, target).numpy(),
                               4.0 * np.abs(PRED - TARGET).mean(), rtol=1e-6)
    np.testing.assert_allclose(MSELoss(reduction="sum")(pred, target).numpy(),
                               ((PRED - TARGET) ** 2).sum(), rtol=1e-6)
    assert LOSS_REGISTRY.get("SmoothL1Loss") is SmoothL1Loss
