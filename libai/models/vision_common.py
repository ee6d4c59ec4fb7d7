"""Pieces the vision models (ViT, Swin) share: patch embedding, initialisation, the
classification loss and the output convention.

One copy of each, so that a fix to, say, soft-target handling reaches both models at once.
Every piece places itself through the current :class:`~libai.utils.distributed.ParallelLayout`
like the layers in :mod:`libai.layers`, so the models run unchanged in one process and under
data, tensor and pipeline parallelism.
"""
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers import LayerNorm
from libai.layers.utils import broadcast, make_parameter, to_sbp
from libai.models.common.losses import ClassificationLoss
from libai.utils.distributed import current_layout

__all__ = [
    "ImageClassificationLoss",
    "ImageClassifierMixin",
    "PatchEmbedding",
    "drop_path_rates",
    "to_2tuple",
    "trunc_normal_init",
]

Size2 = Union[int, Sequence[int]]


def to_2tuple(value: Size2, name: str) -> Tuple[int, int]:
    """``7 -> (7, 7)``; ``(h, w)`` stays. Configs may hold either (yaml turns tuples into lists)."""
    if isinstance(value, int):
        return value, value
    pair = tuple(int(v) for v in value)
    if len(pair) != 2:
        raise ValueError(f"{name} must be an int or a pair (height, width), got {value!r}")
    return pair  # type: ignore[return-value]


def trunc_normal_init(std: float = 0.02) -> Callable[[flow.Tensor], flow.Tensor]:
    """Normal(0, std) truncated to ±2 std, filled in place (the vision transformers' init).

    OneFlow 0.9's ``nn.init.trunc_normal_`` clamps a normal sample at *absolute* bounds
    (±2 by default), which for std 0.02 is no truncation at all. This draws from the truncated
    distribution itself, by inverting the normal CDF over the kept probability range.
    """
    low = 0.5 * (1.0 + math.erf(-2.0 / math.sqrt(2.0)))
    high = 1.0 - low

    def init(tensor: flow.Tensor) -> flow.Tensor:
        with flow.no_grad():
            tensor.uniform_(2.0 * low - 1.0, 2.0 * high - 1.0)
            tensor.erfinv_()
            tensor.mul_(std * math.sqrt(2.0))
            return tensor.clamp_(-2.0 * std, 2.0 * std)

    return init


def drop_path_rates(max_rate: float, num_blocks: int) -> List[float]:
    """Stochastic-depth probability of each block: rising linearly from 0 to ``max_rate``.

    Deeper blocks are dropped more often; the first one never is.
    """
    if not 0.0 <= max_rate < 1.0:
        raise ValueError(f"drop_path_rate must be within [0, 1), got {max_rate}")
    if num_blocks == 1:
        return [0.0]
    return [max_rate * i / (num_blocks - 1) for i in range(num_blocks)]


class PatchEmbedding(nn.Module):
    """Cut an image into non-overlapping ``patch × patch`` squares and project each to a vector.

    A convolution with kernel = stride = patch size: ``[B, C, H, W] -> [B, H/p · W/p, dim]``,
    patches in row-major order. The weight has the usual conv shape ``[dim, C, p, p]`` (so
    pretrained ViT/Swin patch projections load as they are) and is replicated over
    tensor-parallel ranks; the batch stays split over data-parallel ranks.

    Args:
        img_size, patch_size: ints or ``(height, width)``; the image must divide into patches.
        in_chans, embed_dim: input channels and output width.
        norm: add a LayerNorm over each patch vector (Swin does, ViT does not).
        init_method: fills the full conv weight in place.
        layer_idx: pipeline position (the first layer, ``0``).
    """

    def __init__(
        self,
        img_size: Size2 = 224,
        patch_size: Size2 = 16,
        in_chans: int = 3,
        embed_dim: int = 768,
        norm: bool = False,
        init_method: Callable[[flow.Tensor], Any] = trunc_normal_init(),
        *,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        self.img_size = to_2tuple(img_size, "img_size")
        self.patch_size = to_2tuple(patch_size, "patch_size")
        for axis, (size, patch) in enumerate(zip(self.img_size, self.patch_size)):
            if patch < 1 or size % patch:
                raise ValueError(
                    f"img_size {self.img_size} does not divide into patches of {self.patch_size} "
                    f"({'height' if axis == 0 else 'width'} {size} % {patch} != 0); pick a "
                    "patch_size that divides the image size"
                )
        self.grid_size = (
            self.img_size[0] // self.patch_size[0], self.img_size[1] // self.patch_size[1]
        )
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.in_chans = in_chans
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.weight = make_parameter(
            (embed_dim, in_chans, *self.patch_size), init_method, self.layout, layer_idx
        )
        self.bias = make_parameter((embed_dim,), nn.init.zeros_, self.layout, layer_idx)
        self.norm = LayerNorm(embed_dim, layer_idx=layer_idx) if norm else None

    def forward(self, images: flow.Tensor) -> flow.Tensor:
        if images.ndim != 4 or tuple(images.shape[1:]) != (self.in_chans, *self.img_size):
            raise ValueError(
                f"expected images of shape [batch, {self.in_chans}, {self.img_size[0]}, "
                f"{self.img_size[1]}], got {tuple(images.shape)}; resize the images in the "
                "data transforms or set the model's img_size / in_chans to match"
            )
        images = to_sbp(images, self.layout, self.layer_idx, tensor_sbp=broadcast())
        if images.dtype != self.weight.dtype:
            images = images.to(self.weight.dtype)
        x = flow.nn.functional.conv2d(images, self.weight, self.bias, stride=self.patch_size)
        x = x.flatten(2).transpose(1, 2)  # [B, dim, gh, gw] -> [B, gh*gw, dim]
        return self.norm(x) if self.norm is not None else x

    def extra_repr(self) -> str:
        return (f"img_size={self.img_size}, patch_size={self.patch_size}, "
                f"in_chans={self.in_chans}, embed_dim={self.weight.shape[0]}, "
                f"layer_idx={self.layer_idx}")


class ImageClassificationLoss(nn.Module):
    """Mean cross entropy of ``logits [B, classes]`` against hard or soft labels.

    - hard labels: integer class ids ``[B]`` (what image datasets yield);
    - soft targets: float ``[B, classes]``, each row a distribution (what MixUp/CutMix and
      label smoothing produce, see :mod:`libai.data.mixup`): ``-Σ target · log_softmax``.

    Both are averaged over the whole global batch and returned whole on every rank of the
    last stage, so a data-parallel run reports exactly the one-process loss.
    """

    def __init__(self, *, layer_idx: int = -1) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.hard = ClassificationLoss(layer_idx=layer_idx)

    def forward(self, logits: flow.Tensor, labels: flow.Tensor) -> flow.Tensor:
        if logits.ndim != 2:
            raise ValueError(f"expected logits [batch, classes], got {tuple(logits.shape)}")
        if labels.ndim == 1 and not labels.dtype.is_floating_point:
            if labels.shape[0] != logits.shape[0]:
                raise ValueError(
                    f"{labels.shape[0]} labels for a batch of {logits.shape[0]} images"
                )
            return self.hard(logits, labels)
        if labels.ndim == 2 and labels.dtype.is_floating_point:
            if tuple(labels.shape) != tuple(logits.shape):
                raise ValueError(
                    f"soft targets of shape {tuple(labels.shape)} do not match logits "
                    f"{tuple(logits.shape)}; set the Mixup's num_classes to the model's num_classes"
                )
            return self._soft(logits, labels)
        raise ValueError(
            f"labels must be integer class ids [batch] or float soft targets [batch, classes]; "
            f"got dtype {labels.dtype} and shape {tuple(labels.shape)}"
        )

    def _soft(self, logits: flow.Tensor, targets: flow.Tensor) -> flow.Tensor:
        layout, idx = self.layout, self.layer_idx
        logits = to_sbp(logits, layout, idx, tensor_sbp=broadcast())
        if logits.dtype != flow.float32:
            logits = logits.to(flow.float32)
        targets = to_sbp(targets, layout, idx, tensor_sbp=broadcast()).to(flow.float32)
        per_sample = -(targets * flow.log_softmax(logits, dim=-1)).sum(dim=-1)
        loss = per_sample.mean()
        return to_sbp(loss, layout, idx, tensor_sbp=broadcast(), data_sbp=broadcast())


class ImageClassifierMixin:
    """The output convention of libai image classifiers.

    A model sets ``self.loss_func`` and ``self._blocks()`` (its repeated blocks) and calls
    :meth:`classifier_outputs` at the end of ``forward``.
    """

    loss_func: nn.Module
    training: bool

    def classifier_outputs(
        self, logits: flow.Tensor, labels: Optional[flow.Tensor]
    ) -> Dict[str, flow.Tensor]:
        """``{"losses": loss}`` in training with labels, else ``{"prediction_scores": logits}``."""
        if self.training and labels is not None:
            return {"losses": self.loss_func(logits, labels)}
        return {"prediction_scores": logits}

    def activation_checkpoint_modules(self) -> List[nn.Module]:
        """The blocks activation checkpointing recomputes: every transformer block, in order."""
        return list(self._blocks())

    def _blocks(self) -> List[nn.Module]:  # pragma: no cover - each model defines it
        raise NotImplementedError

