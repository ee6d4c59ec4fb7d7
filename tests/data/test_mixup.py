"""MixUp / CutMix mixing math, checked against NumPy on random batches."""
import numpy as np
import pytest

import oneflow as flow

from libai.data.mixup import Mixup, mix_batch
from libai.data.structures import DistTensorData, Instance

K = 5


def batch(n=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3, 6, 8)).astype(np.float32)
    y = np.arange(n) % K  # partners (reversed batch) have different labels
    return x, y


def smooth(y, s, k=K):
    t = np.full((len(y), k), s / k)
    t[np.arange(len(y)), y] = 1 - s + s / k
    return t


def run(mixer, x, y):
    images, targets = mixer(flow.tensor(x), flow.tensor(y, dtype=flow.long))
    return images.numpy(), targets.numpy()


def test_no_mixing_gives_smoothed_one_hot():
    x, y = batch()
    images, targets = run(Mixup(prob=0.0, label_smoothing=0.1, num_classes=K), x, y)
    assert np.array_equal(images, x)
    assert np.allclose(targets, smooth(y, 0.1))


@pytest.mark.parametrize("s", [0.0, 0.2])
def test_mixup_blends_images_and_targets_by_one_lambda(s):
    x, y = batch()
    mixer = Mixup(mixup_alpha=0.4, cutmix_alpha=0.0, label_smoothing=s, num_classes=K, seed=3)
    for _ in range(4):
        images, targets = run(mixer, x, y)
        on, off = 1 - s + s / K, s / K
        lam = (targets[0, y[0]] - off) / (on - off)  # partner's label differs from y[0]
        assert 0.0 < lam < 1.0
        assert np.allclose(images, lam * x + (1 - lam) * x[::-1], atol=1e-6)
        assert np.allclose(targets, lam * smooth(y, s) + (1 - lam) * smooth(y[::-1], s), atol=1e-6)


def test_cutmix_pastes_one_box_and_weights_targets_by_its_area():
    x, y = batch()
    mixer = Mixup(mixup_alpha=0.0, cutmix_alpha=1.0, label_smoothing=0.0, num_classes=K, seed=0)
    boxes = 0
    for _ in range(8):
        images, targets = run(mixer, x, y)
        changed = (images != x).any(axis=(0, 1))  # (H, W) pixels taken from the partner
        rows, cols = np.where(changed)
        area = 0
        if rows.size:
            boxes += 1
            top, bottom, left, right = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
            assert changed[top:bottom, left:right].all()
            assert changed.sum() == (bottom - top) * (right - left)
            area = changed.sum()
            assert np.array_equal(images[:, :, changed], x[::-1][:, :, changed])
        lam = 1 - area / (6 * 8)
        assert np.allclose(targets, lam * smooth(y, 0) + (1 - lam) * smooth(y[::-1], 0), atol=1e-6)
    assert boxes >= 4  # Beta(1, 1) rarely gives an empty box


@pytest.mark.parametrize("switch_prob,mode", [(1.0, "cutmix"), (0.0, "mixup")])
def test_switch_prob_chooses_the_mode(switch_prob, mode):
    mixer = Mixup(mixup_alpha=1.0, cutmix_alpha=1.0, switch_prob=switch_prob, num_classes=K)
    assert {mixer.draw()[0] for _ in range(20)} == {mode}


def test_seeded_and_resumable():
    x, y = batch()
    a, b = Mixup(num_classes=K, seed=11), Mixup(num_classes=K, seed=11)
    np.random.seed(0)
    first = run(a, x, y)
    np.random.seed(99)  # the global RNG plays no part
    assert all(np.array_equal(u, v) for u, v in zip(first, run(b, x, y)))
    state = a.state_dict()
    expected = [run(a, x, y) for _ in range(3)]
    c = Mixup(num_classes=K, seed=0)
    c.load_state_dict(state)
    for want in expected:
        assert all(np.array_equal(u, v) for u, v in zip(want, run(c, x, y)))


def test_mix_batch_keeps_distribution_of_fields():
    x, y = batch()
    inst = Instance(
        images=DistTensorData(flow.tensor(x)),
        labels=DistTensorData(flow.tensor(y, dtype=flow.long), placement_idx=-1),
    )
    out = mix_batch(inst, Mixup(prob=0.0, label_smoothing=0.0, num_classes=K))
    assert out.labels.placement_idx == -1 and out.images.placement_idx == 0
    assert np.allclose(out.labels.tensor.numpy(), smooth(y, 0.0))
    with pytest.raises(KeyError, match="batch field 'labels'"):
        mix_batch(Instance(images=DistTensorData(flow.tensor(x))), Mixup(num_classes=K))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"mixup_alpha": -1}, "must be >= 0"),
        ({"prob": 1.5}, "prob must be within"),
        ({"label_smoothing": 1.0}, "label_smoothing"),
        ({"num_classes": 1}, "num_classes"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Mixup(**kwargs)


def test_bad_shapes():
    mixer = Mixup(num_classes=K)
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)"):
        mixer(flow.zeros(4, 6, 8), flow.zeros(4, dtype=flow.long))
    with pytest.raises(ValueError, match="apply it once, to hard labels"):
        mixer(flow.zeros(4, 3, 6, 8), flow.zeros(4, K))
