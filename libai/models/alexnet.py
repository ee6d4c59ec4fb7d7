"""AlexNet (Krizhevsky et al., 2012), in the one-tower form OneFlow's and PyTorch's zoos ship.

Five convolutions (11×11 stride 4, 5×5, then three 3×3; widths 64, 192, 384, 256, 256) with max
pools after the first, second and fifth, an adaptive average pool to 6×6, and three fully
connected layers (4096, 4096, classes) with dropout before the first two. Module names and
shapes are flowvision's ``AlexNet`` (``features.0`` ... ``classifier.6``), so its checkpoints load
key for key; 61,100,840 parameters with 1000 classes.

Data-parallel, like :class:`~libai.models.resnet.ResNet` (see :mod:`libai.models.cnn_common`).
The widths, the hidden size and the pooled size are arguments so that tests can shrink it.
Inputs need at least 63×63 pixels (three stride-2 pools after a stride-4 conv).
"""
from typing import Dict, List, Optional, Sequence

import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import Linear
from libai.models.cnn_common import Conv2d, check_data_parallel_layout, torch_default_init
from libai.models.vision_common import ImageClassificationLoss, ImageClassifierMixin
from libai.utils.distributed import current_layout

__all__ = ["AlexNet"]


class AlexNet(nn.Module, ImageClassifierMixin):
    """AlexNet image classifier.

    Args:
        num_classes: width of the head.
        in_chans: input channels.
        dropout: dropout probability before the first two fully connected layers.
        channels: widths of the five convolutions.
        hidden_size: width of the two hidden fully connected layers.
        pool_size: side of the adaptive average pool before the classifier (6 in AlexNet).
        loss_func: a module ``(logits, labels) -> scalar``; the default takes hard labels and
            soft targets.

    ``forward(images, labels=None)`` returns ``{"losses": loss}`` in training with labels, else
    ``{"prediction_scores": logits [B, num_classes]}``.
    """

    @configurable
    def __init__(
        self,
        num_classes: int = 1000,
        in_chans: int = 3,
        dropout: float = 0.5,
        channels: Sequence[int] = (64, 192, 384, 256, 256),
        hidden_size: int = 4096,
        pool_size: int = 6,
        loss_func: Optional[nn.Module] = None,
    ) -> None:
        super().__init__()
        channels = [int(c) for c in channels]
        if len(channels) != 5:
            raise ValueError(f"AlexNet has 5 convolutions; channels must list 5 widths, got {channels}")
        if num_classes < 1 or hidden_size < 1 or pool_size < 1:
            raise ValueError("num_classes, hidden_size and pool_size must be >= 1")
        self.layout = current_layout()
        check_data_parallel_layout(self.layout, "AlexNet")
        c1, c2, c3, c4, c5 = channels
        pool = lambda: nn.MaxPool2d(kernel_size=3, stride=2)  # noqa: E731
        self.features = nn.Sequential(
            Conv2d(in_chans, c1, 11, stride=4, padding=2), nn.ReLU(), pool(),
            Conv2d(c1, c2, 5, padding=2), nn.ReLU(), pool(),
            Conv2d(c2, c3, 3, padding=1), nn.ReLU(),
            Conv2d(c3, c4, 3, padding=1), nn.ReLU(),
            Conv2d(c4, c5, 3, padding=1), nn.ReLU(), pool(),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((pool_size, pool_size))
        dense = lambda i, o: Linear(i, o, init_method=torch_default_init, layer_idx=-1)  # noqa: E731
        self.classifier = nn.Sequential(
            nn.Dropout(dropout), dense(c5 * pool_size * pool_size, hidden_size), nn.ReLU(),
            nn.Dropout(dropout), dense(hidden_size, hidden_size), nn.ReLU(),
            dense(hidden_size, num_classes),
        )
        self.loss_func = ImageClassificationLoss(layer_idx=-1) if loss_func is None else loss_func

    def forward_features(self, images: flow.Tensor) -> flow.Tensor:
        """Pooled convolutional features, flattened ``[B, channels[-1] · pool_size²]``."""
        return flow.flatten(self.avgpool(self.features(images)), 1)

    def forward(
        self, images: flow.Tensor, labels: Optional[flow.Tensor] = None
    ) -> Dict[str, flow.Tensor]:
        if images.ndim == 4 and min(images.shape[-2:]) < 63:
            raise ValueError(
                f"AlexNet needs images of at least 63×63 pixels, got {tuple(images.shape[-2:])}; "
                "resize them in the data transforms (size=224 for the ImageNet recipe)"
            )
        return self.classifier_outputs(self.classifier(self.forward_features(images)), labels)

    def _blocks(self) -> List[nn.Module]:
        return []  # no repeated blocks: activation checkpointing has nothing to recompute
