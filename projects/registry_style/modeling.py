"""DigitsNet: a classifier of 16x16 digits with a reconstruction head, two weighted losses.

Registered by name (``@MODEL_REGISTRY.register()``), so the YAML config builds it as
``model: {name: DigitsNet, backbone: {name: DigitsMLP, ...}, loss: {...}}``. The ``loss`` dict
of the config reaches the model as a built ``LossKeyCompose``: the model only gathers its
outputs under the names the losses read (``input_name``) and returns the composed dict, one
entry per loss key, which the trainer sums and logs key by key.
"""
from typing import Dict, Optional

import oneflow as flow
from oneflow import nn

from libai.config import MODEL_REGISTRY
from libai.layers import LossKeyCompose

__all__ = ["DigitsMLP", "DigitsNet"]


@MODEL_REGISTRY.register()
class DigitsMLP(nn.Module):
    """Flattened ``(1, size, size)`` image -> ``hidden`` features (two ReLU layers)."""

    def __init__(self, image_size: int = 16, hidden: int = 128) -> None:
        super().__init__()
        self.out_features = hidden
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(image_size * image_size, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
        )

    def forward(self, images: flow.Tensor) -> flow.Tensor:
        return self.net(images)


@MODEL_REGISTRY.register()
class DigitsNet(nn.Module):
    """Backbone -> (class logits, reconstructed image).

    Outputs handed to the losses: ``logits``, ``labels``, ``recon`` and ``images``. In
    evaluation (or without labels) it returns ``{"prediction_scores": logits}`` for
    ``ClsEvaluator``.
    """

    def __init__(self, backbone: nn.Module, loss: LossKeyCompose, num_classes: int = 10,
                 image_size: int = 16) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(backbone.out_features, num_classes)
        self.decoder = nn.Linear(backbone.out_features, image_size * image_size)
        self.image_size = image_size
        self.loss = loss if isinstance(loss, LossKeyCompose) else LossKeyCompose(loss)

    def forward(self, images: flow.Tensor, labels: Optional[flow.Tensor] = None) -> Dict[str, flow.Tensor]:
        features = self.backbone(images)
        logits = self.head(features)
        if labels is None or not self.training:
            return {"prediction_scores": logits}
        recon = flow.sigmoid(self.decoder(features)).reshape(images.shape)
        return self.loss({"logits": logits, "labels": labels, "recon": recon, "images": images})
