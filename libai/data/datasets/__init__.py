"""Datasets, one module per family. Every ``__getitem__`` returns an
:class:`~libai.data.structures.Instance` whose field names are the model's ``forward`` arguments."""
from libai.data.datasets.cifar import CIFAR10Dataset, CIFAR100Dataset
from libai.data.datasets.image_base import ImageClassificationDataset
from libai.data.datasets.imagefolder import ImageFolderDataset
from libai.data.datasets.mnist import MNISTDataset
from libai.data.datasets.ofrecord import OFRecordImageDataset

__all__ = [
    "ImageClassificationDataset",
    "MNISTDataset",
    "CIFAR10Dataset",
    "CIFAR100Dataset",
    "ImageFolderDataset",
    "OFRecordImageDataset",
]
