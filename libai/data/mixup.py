"""MixUp and CutMix on a batch, turning hard class labels into soft targets.

Both regularisers blend each image with another image of the same batch and blend their labels
by the same proportion. The partner of sample ``i`` is sample ``n - 1 - i`` (the batch reversed),
which needs no extra randomness and pairs every sample exactly once. One mixing coefficient
``lam`` is drawn per batch from ``Beta(alpha, alpha)``:

* MixUp: ``x = lam · x + (1 - lam) · x_reversed``.
* CutMix: a box covering a ``1 - lam`` fraction of the image is pasted from the partner; ``lam``
  is then recomputed from the box actually pasted (it may be clipped at the image border).

Targets become ``lam · onehot(y) + (1 - lam) · onehot(y_reversed)``, where ``onehot`` already
carries label smoothing (``1 - s + s/K`` on the true class, ``s/K`` elsewhere). The randomness
comes from a private NumPy generator seeded at construction, so a run is repeatable and the
global RNG is left alone; its state is saved with :meth:`Mixup.state_dict`.

In a loader built by :func:`libai.data.build.build_image_train_loader` with ``mixup_func=``, the
mixing is applied in the main process to every training batch as it leaves the loader
(see :func:`mix_batch`), so the model receives soft ``labels`` of shape ``(batch, num_classes)``
and its loss must accept soft targets.
"""
from typing import Any, Dict, Tuple

import numpy as np
import oneflow as flow

from libai.data.structures import DistTensorData, Instance

__all__ = ["Mixup", "one_hot_smoothed", "mix_batch"]


def one_hot_smoothed(
    labels: flow.Tensor, num_classes: int, smoothing: float = 0.0
) -> flow.Tensor:
    """Float one-hot targets with label smoothing, on the labels' device."""
    off = smoothing / num_classes
    on = 1.0 - smoothing + off
    hot = flow.nn.functional.one_hot(labels.to(flow.long).reshape(-1), num_classes)
    return hot.to(flow.float32) * (on - off) + off


class Mixup:
    """Batch-wise MixUp / CutMix with label smoothing.

    Args:
        mixup_alpha: Beta parameter of MixUp; ``0`` disables MixUp.
        cutmix_alpha: Beta parameter of CutMix; ``0`` disables CutMix.
        prob: probability of mixing a given batch at all (else only smoothing applies).
        switch_prob: when both are enabled, probability of CutMix rather than MixUp.
        label_smoothing: smoothing ``s`` of the one-hot targets.
        num_classes: number of classes ``K`` (width of the soft targets).
        seed: seed of the private generator.
        image_field / label_field: the batch fields :func:`mix_batch` rewrites.
    """

    def __init__(
        self,
        mixup_alpha: float = 0.8,
        cutmix_alpha: float = 1.0,
        prob: float = 1.0,
        switch_prob: float = 0.5,
        label_smoothing: float = 0.1,
        num_classes: int = 1000,
        seed: int = 0,
        image_field: str = "images",
        label_field: str = "labels",
    ) -> None:
        if mixup_alpha < 0 or cutmix_alpha < 0:
            raise ValueError(
                f"mixup_alpha and cutmix_alpha must be >= 0 (0 disables one), got "
                f"{mixup_alpha} and {cutmix_alpha}"
            )
        for name, value in (("prob", prob), ("switch_prob", switch_prob)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be within [0, 1), got {label_smoothing}")
        if int(num_classes) < 2:
            raise ValueError(f"num_classes must be >= 2, got {num_classes}")
        self.mixup_alpha = float(mixup_alpha)
        self.cutmix_alpha = float(cutmix_alpha)
        self.prob = float(prob)
        self.switch_prob = float(switch_prob)
        self.label_smoothing = float(label_smoothing)
        self.num_classes = int(num_classes)
        self.image_field = image_field
        self.label_field = label_field
        self._rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ randomness
    def draw(self) -> Tuple[str, float]:
        """Decide the mode for one batch: ``("none", 1.0)``, ``("mixup", lam)`` or
        ``("cutmix", lam)``."""
        enabled = self.mixup_alpha > 0 or self.cutmix_alpha > 0
        if not enabled or self._rng.random() >= self.prob:
            return "none", 1.0
        use_cutmix = self.cutmix_alpha > 0 and (
            self.mixup_alpha == 0 or self._rng.random() < self.switch_prob
        )
        alpha = self.cutmix_alpha if use_cutmix else self.mixup_alpha
        return ("cutmix" if use_cutmix else "mixup"), float(self._rng.beta(alpha, alpha))

    def cutmix_box(self, height: int, width: int, lam: float) -> Tuple[int, int, int, int]:
        """A box ``(top, bottom, left, right)`` of area about ``(1 - lam)·H·W``, centred at a
        uniformly drawn pixel and clipped to the image."""
        ratio = np.sqrt(1.0 - lam)
        cut_h, cut_w = int(height * ratio), int(width * ratio)
        cy, cx = int(self._rng.integers(0, height)), int(self._rng.integers(0, width))
        top, bottom = np.clip([cy - cut_h // 2, cy + cut_h // 2], 0, height)
        left, right = np.clip([cx - cut_w // 2, cx + cut_w // 2], 0, width)
        return int(top), int(bottom), int(left), int(right)

    # ------------------------------------------------------------------ mixing
    def __call__(self, images: flow.Tensor, labels: flow.Tensor) -> Tuple[flow.Tensor, flow.Tensor]:
        """Mix a batch ``images (N, C, H, W)`` with integer ``labels (N,)``.

        Returns the mixed images and soft targets ``(N, num_classes)``.
        """
        if images.ndim != 4:
            raise ValueError(
                f"Mixup expects images of shape (N, C, H, W), got {tuple(images.shape)}"
            )
        if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
            raise ValueError(
                f"Mixup expects integer labels of shape ({images.shape[0]},), got "
                f"{tuple(labels.shape)}; apply it once, to hard labels"
            )
        mode, lam = self.draw()
        partner = images.flip(0)
        if mode == "mixup":
            images = images * lam + partner * (1.0 - lam)
        elif mode == "cutmix":
            height, width = int(images.shape[2]), int(images.shape[3])
            top, bottom, left, right = self.cutmix_box(height, width, lam)
            images = images.clone()
            images[:, :, top:bottom, left:right] = partner[:, :, top:bottom, left:right]
            lam = 1.0 - (bottom - top) * (right - left) / float(height * width)
        target = one_hot_smoothed(labels, self.num_classes, self.label_smoothing)
        if mode != "none":
            target = target * lam + target.flip(0) * (1.0 - lam)
        return images, target

    def state_dict(self) -> Dict[str, Any]:
        """The generator state, so that a resumed run draws the same sequence."""
        return {"rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self._rng.bit_generator.state = state["rng"]


def mix_batch(batch: Instance, mixup_func: Any) -> Instance:
    """Apply ``mixup_func(images, labels) -> (images, targets)`` to a batch Instance.

    The fields are named by the mixer's ``image_field`` / ``label_field`` attributes (default
    ``images`` / ``labels``); their SBP and pipeline placement are kept.
    """
    image_field = getattr(mixup_func, "image_field", "images")
    label_field = getattr(mixup_func, "label_field", "labels")
    for name in (image_field, label_field):
        if not batch.has(name):
            raise KeyError(
                f"mixup needs the batch field {name!r}, but the batch has "
                f"{list(batch.get_fields())}; set image_field/label_field on the Mixup"
            )
    images, labels = batch.get(image_field), batch.get(label_field)
    new_images, new_labels = mixup_func(_tensor_of(images), _tensor_of(labels))
    batch.set(image_field, _rewrap(images, new_images))
    batch.set(label_field, _rewrap(labels, new_labels))
    return batch


def _tensor_of(value: Any) -> flow.Tensor:
    return value.tensor if isinstance(value, DistTensorData) else value


def _rewrap(old: Any, tensor: flow.Tensor) -> Any:
    if isinstance(old, DistTensorData):
        return DistTensorData(tensor, sbp_list=old.sbp_list, placement_idx=old.placement_idx)
    return tensor
