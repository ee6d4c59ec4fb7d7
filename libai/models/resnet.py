"""ResNet (He et al., 2015): residual convolutional classifiers, ResNet-18 to ResNet-152.

A 7×7 stride-2 stem and a max pool, four stages of residual blocks whose width doubles and
resolution halves from one stage to the next, a global average pool and a linear head.
ResNet-18/34 use *basic* blocks (two 3×3 convs), ResNet-50/101/152 *bottleneck* blocks
(1×1 reduce, 3×3, 1×1 expand ×4), with the stride on the 3×3 conv (torchvision's "v1.5").
Module names and shapes are torchvision's/flowvision's, so their checkpoints load key for key.

Data-parallel (see :mod:`libai.models.cnn_common`): batch norm statistics are those of the global
batch, so any data-parallel size trains like one process. Tensor parallelism runs it replicated;
pipeline parallelism is refused with the fix.
"""
from typing import Dict, List, Optional, Tuple

import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import Linear
from libai.models.cnn_common import (
    BatchNorm2d,
    Conv2d,
    check_data_parallel_layout,
    kaiming_normal_fan_out,
    torch_default_init,
)
from libai.models.vision_common import ImageClassificationLoss, ImageClassifierMixin
from libai.utils.distributed import current_layout

__all__ = ["BasicBlock", "Bottleneck", "ResNet", "RESNET_DEPTHS"]


def _conv(cin: int, cout: int, kernel: int, stride: int = 1) -> Conv2d:
    """A bias-free conv with "same" padding (a batch norm follows every conv)."""
    return Conv2d(cin, cout, kernel, stride, padding=kernel // 2, bias=False,
                  init_method=kaiming_normal_fan_out)


class BasicBlock(nn.Module):
    """Two 3×3 convs and a shortcut: ``relu(bn2(conv2(relu(bn1(conv1 x)))) + shortcut(x))``."""

    expansion = 1

    def __init__(self, in_channels: int, width: int, stride: int = 1) -> None:
        super().__init__()
        out = width * self.expansion
        self.conv1, self.bn1 = _conv(in_channels, width, 3, stride), BatchNorm2d(width)
        self.conv2, self.bn2 = _conv(width, out, 3), BatchNorm2d(out)
        self.relu = nn.ReLU()
        self.downsample = _shortcut(in_channels, out, stride)

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)

    def last_bn(self) -> BatchNorm2d:
        return self.bn2


class Bottleneck(nn.Module):
    """1×1 reduce to ``width``, 3×3 (carrying the stride), 1×1 expand to ``4 · width``."""

    expansion = 4

    def __init__(self, in_channels: int, width: int, stride: int = 1) -> None:
        super().__init__()
        out = width * self.expansion
        self.conv1, self.bn1 = _conv(in_channels, width, 1), BatchNorm2d(width)
        self.conv2, self.bn2 = _conv(width, width, 3, stride), BatchNorm2d(width)
        self.conv3, self.bn3 = _conv(width, out, 1), BatchNorm2d(out)
        self.relu = nn.ReLU()
        self.downsample = _shortcut(in_channels, out, stride)

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)

    def last_bn(self) -> BatchNorm2d:
        return self.bn3


def _shortcut(cin: int, cout: int, stride: int) -> Optional[nn.Sequential]:
    """A 1×1 projection (with batch norm) when the block changes width or resolution."""
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(_conv(cin, cout, 1, stride), BatchNorm2d(cout))


# depth -> (block, blocks per stage): the architectures of the ResNet paper's Table 1.
RESNET_DEPTHS: Dict[int, Tuple[type, Tuple[int, int, int, int]]] = {
    18: (BasicBlock, (2, 2, 2, 2)),
    34: (BasicBlock, (3, 4, 6, 3)),
    50: (Bottleneck, (3, 4, 6, 3)),
    101: (Bottleneck, (3, 4, 23, 3)),
    152: (Bottleneck, (3, 8, 36, 3)),
}


class ResNet(nn.Module, ImageClassifierMixin):
    """ResNet image classifier.

    Args:
        depth: 18, 34, 50, 101 or 152 (see :data:`RESNET_DEPTHS`).
        in_chans: input channels.
        num_classes: width of the head.
        width: channels of the stem and of the first stage (64 in the paper); stage ``k`` has
            ``width · 2^k`` (× 4 at the output of bottleneck blocks). Shrink it for tests.
        small_input: a CIFAR-style stem (one 3×3 stride-1 conv, no max pool) for 32×32 images
            instead of the ImageNet stem (7×7 stride 2 and a 3×3 stride-2 max pool).
        zero_init_residual: start the last batch norm of every block at 0, so each block
            begins as the identity (helps large-batch training; Goyal et al., 2017).
        loss_func: a module ``(logits, labels) -> scalar``; the default takes hard labels and
            the soft targets of MixUp/CutMix.

    ``forward(images, labels=None)`` returns ``{"losses": loss}`` in training with labels, else
    ``{"prediction_scores": logits [B, num_classes]}``. Any image size works (the pool is global).
    """

    @configurable
    def __init__(
        self,
        depth: int = 50,
        in_chans: int = 3,
        num_classes: int = 1000,
        width: int = 64,
        small_input: bool = False,
        zero_init_residual: bool = False,
        loss_func: Optional[nn.Module] = None,
    ) -> None:
        super().__init__()
        if depth not in RESNET_DEPTHS:
            raise ValueError(f"ResNet depth {depth} is not one of {sorted(RESNET_DEPTHS)}")
        if num_classes < 1 or width < 1:
            raise ValueError(f"num_classes and width must be >= 1, got {num_classes}, {width}")
        self.layout = current_layout()
        check_data_parallel_layout(self.layout, "ResNet")
        block, counts = RESNET_DEPTHS[depth]
        self.depth = depth
        if small_input:
            self.conv1 = _conv(in_chans, width, 3)
            self.maxpool: nn.Module = nn.Identity()
        else:
            self.conv1 = _conv(in_chans, width, 7, stride=2)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.bn1 = BatchNorm2d(width)
        self.relu = nn.ReLU()
        channels = width
        for stage, count in enumerate(counts):
            layer, channels = _stage(block, channels, width * 2 ** stage, count, 1 if stage == 0 else 2)
            setattr(self, f"layer{stage + 1}", layer)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = Linear(channels, num_classes, init_method=torch_default_init, layer_idx=-1)
        self.loss_func = ImageClassificationLoss(layer_idx=-1) if loss_func is None else loss_func
        if zero_init_residual:
            for b in self._blocks():
                flow.nn.init.zeros_(b.last_bn().weight)

    def forward_features(self, images: flow.Tensor) -> flow.Tensor:
        """Globally pooled features of the last stage ``[B, channels]``."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(images))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return flow.flatten(self.avgpool(x), 1)

    def forward(
        self, images: flow.Tensor, labels: Optional[flow.Tensor] = None
    ) -> Dict[str, flow.Tensor]:
        return self.classifier_outputs(self.fc(self.forward_features(images)), labels)

    def _blocks(self) -> List[nn.Module]:
        return [b for i in range(1, 5) for b in getattr(self, f"layer{i}")]


def _stage(block: type, cin: int, width: int, count: int, stride: int) -> Tuple[nn.Sequential, int]:
    """``count`` blocks, the first carrying the stride; returns the stage and its out channels."""
    blocks: List[nn.Module] = []
    for i in range(count):
        blocks.append(block(cin, width, stride if i == 0 else 1))
        cin = width * block.expansion
    return nn.Sequential(*blocks), cin
