"""ResNet config: ``from configs.common.models.resnet import model`` (ResNet-50, ImageNet-1k).

Named sizes as functions returning fresh nodes: ``resnet18()``, ``resnet34()``, ``resnet50()``,
``resnet101()``, ``resnet152()``. For 32×32 images (CIFAR) set ``model.small_input = True``.
ResNet is data-parallel: it runs replicated under tensor parallelism and refuses pipeline
parallelism (train.dist.pipeline_parallel_size must stay 1). Batch-norm statistics are those of
the global batch, so a data-parallel run trains like one process.
"""
import copy

from libai.config import LazyCall
from libai.models import ResNet

model = LazyCall(ResNet)(
    depth=50,  # 18, 34, 50, 101 or 152
    in_chans=3,
    num_classes=1000,
    width=64,  # channels of the stem and the first stage (the paper's 64)
    small_input=False,  # True: CIFAR stem (3×3 stride-1 conv, no max pool)
    zero_init_residual=False,  # True: each block starts as the identity
    loss_func=None,  # None = cross entropy on hard labels or soft targets
)


def resnet_preset(depth: int, num_classes: int = 1000):
    """A fresh ResNet node of the given depth (every field stays editable on the node)."""
    node = copy.deepcopy(model)
    node.update(depth=depth, num_classes=num_classes)
    return node


def resnet18():
    return resnet_preset(18)


def resnet34():
    return resnet_preset(34)


def resnet50():
    return resnet_preset(50)


def resnet101():
    return resnet_preset(101)


def resnet152():
    return resnet_preset(152)
