"""CIFAR-100 loaders: the python batches under ``./data/cifar`` (``cifar-100-python/``).

Training uses pad-and-crop, horizontal flips and MixUp/CutMix with label smoothing, so the model's
loss must accept soft targets ``(batch, 100)``; set ``dataloader.train.mixup_func=None`` for hard
labels. Data set-up: docs/prepare_image_data.md.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_image_test_loader, build_image_train_loader
from libai.data.datasets import CIFAR100Dataset
from libai.data.mixup import Mixup
from libai.data.transforms import build_image_transforms

_train_transform = LazyCall(build_image_transforms)(
    train=True,
    size=32,
    mean=[0.5071, 0.4865, 0.4409],
    std=[0.2673, 0.2564, 0.2762],
    crop="pad",
    padding=4,
    hflip=0.5,
)
_test_transform = LazyCall(build_image_transforms)(
    train=False, size=32, mean=[0.5071, 0.4865, 0.4409], std=[0.2673, 0.2564, 0.2762], crop="none"
)

dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_image_train_loader)(
    dataset=[
        LazyCall(CIFAR100Dataset)(root="./data/cifar", train=True, transform=_train_transform),
    ],
    num_workers=4,
    mixup_func=LazyCall(Mixup)(
        mixup_alpha=0.8, cutmix_alpha=1.0, prob=1.0, switch_prob=0.5, label_smoothing=0.1,
        num_classes=100,
    ),
)
dataloader.test = [
    LazyCall(build_image_test_loader)(
        dataset=LazyCall(CIFAR100Dataset)(
            root="./data/cifar", train=False, transform=_test_transform
        ),
        num_workers=4,
    )
]
