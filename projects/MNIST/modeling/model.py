"""A small MLP digit classifier that owns its loss: the quickstart model.

It is a plain ``oneflow.nn`` model (libai places plain modules on the first pipeline stage,
broadcast over data-parallel ranks), written against the model contract of libai: in training
with labels, ``forward`` returns ``{"losses": loss}``; otherwise ``{"prediction_scores": logits}``.
"""
from typing import Dict, Optional, Sequence

import oneflow as flow
from oneflow import nn


class MNISTClassifier(nn.Module):
    """Flattened 28×28 images → ``num_classes`` logits through ReLU hidden layers.

    Args:
        input_size: pixels per image (784 for 28×28).
        hidden_sizes: widths of the hidden layers.
        num_classes: number of digit classes.
        dropout: dropout probability after each hidden layer.
    """

    def __init__(self, input_size: int = 784, hidden_sizes: Sequence[int] = (256, 128),
                 num_classes: int = 10, dropout: float = 0.1) -> None:
        super().__init__()
        layers = []
        width = input_size
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)
        self.loss_func = nn.CrossEntropyLoss()

    def forward(self, inputs: flow.Tensor, labels: Optional[flow.Tensor] = None) -> Dict[str, flow.Tensor]:
        logits = self.net(inputs.flatten(1))
        if self.training and labels is not None:
            return {"losses": self.loss_func(logits, labels)}
        return {"prediction_scores": logits}
