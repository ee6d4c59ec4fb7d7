"""Pieces the vision models (ViT, Swin) share: stochastic-depth rates, the classification loss
and the output convention (the patch embedding and its initialiser live in
:mod:`libai.layers.patch_embedding` and are re-exported here).

One copy of each, so that a fix to, say, soft-target handling reaches both models at once.
Every piece places itself through the current :class:`~libai.utils.distributed.ParallelLayout`
like the layers in :mod:`libai.layers`, so the models run unchanged in one process and under
data, tensor and pipeline parallelism.
"""
from typing import Any, Dict, List, Mapping, Optional

import oneflow as flow
from oneflow import nn

from libai.layers.patch_embedding import PatchEmbedding, Size2, to_2tuple, trunc_normal_init
from libai.layers.utils import broadcast, to_sbp
from libai.models.common.config import resolve_arguments
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

def drop_path_rates(max_rate: float, num_blocks: int) -> List[float]:
    """Stochastic-depth probability of each block: rising linearly from 0 to ``max_rate``.

    Deeper blocks are dropped more often; the first one never is.
    """
    if not 0.0 <= max_rate < 1.0:
        raise ValueError(f"drop_path_rate must be within [0, 1), got {max_rate}")
    if num_blocks == 1:
        return [0.0]
    return [max_rate * i / (num_blocks - 1) for i in range(num_blocks)]


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
    :meth:`classifier_outputs` at the end of ``forward``; its ``@configurable`` ``__init__``
    finds :meth:`from_config` here.
    """

    loss_func: nn.Module
    training: bool

    @classmethod
    def from_config(cls, cfg: Mapping) -> Dict[str, Any]:
        """Constructor arguments from one config dict (``Model(cfg)``, LiBai's style): the
        keys ``__init__`` names, with synonyms resolved (see
        :func:`~libai.models.common.config.resolve_arguments`)."""
        return resolve_arguments(cfg, cls.__init__, cls.__name__)[0]

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

