"""MNIST loaders: the four IDX files under ``./data/mnist``.

Get the files from the MNIST site, or make MNIST-format digits offline with
``python tools/make_digits_mnist.py --output-dir ./data/mnist`` (docs/prepare_image_data.md).
Override the folder with ``dataloader.train.dataset.0.root=... dataloader.test.0.dataset.root=...``.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_image_test_loader, build_image_train_loader
from libai.data.datasets import MNISTDataset
from libai.data.transforms import build_image_transforms

_transform = LazyCall(build_image_transforms)(
    train=False, size=28, mean=[0.1307], std=[0.3081], crop="none", hflip=0.0
)

dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_image_train_loader)(
    dataset=[
        LazyCall(MNISTDataset)(root="./data/mnist", train=True, transform=_transform),
    ],
    num_workers=4,
)
dataloader.test = [
    LazyCall(build_image_test_loader)(
        dataset=LazyCall(MNISTDataset)(root="./data/mnist", train=False, transform=_transform),
        num_workers=4,
    )
]
