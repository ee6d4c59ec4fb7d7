"""Datasets, one module per family. Every ``__getitem__`` returns an
:class:`~libai.data.structures.Instance` whose field names are the model's ``forward`` arguments."""
from libai.data.datasets.cifar import CIFAR10Dataset, CIFAR100Dataset
from libai.data.datasets.image_base import ImageClassificationDataset
from libai.data.datasets.imagefolder import ImageFolderDataset
from libai.data.datasets.imagenet import ImageNetDataset
from libai.data.datasets.mnist import MNISTDataset
from libai.data.datasets.ofrecord import OFRecordImageDataset
from libai.data.datasets.bert_dataset import BertDataset
from libai.data.datasets.gpt_dataset import GPT2Dataset, GPTDataset
from libai.data.datasets.roberta_dataset import RobertaDataset
from libai.data.datasets.synthetic import SyntheticImageDataset, SyntheticLMDataset
from libai.data.datasets.t5_dataset import T5Dataset
from libai.data.datasets.text_classification import TextClassificationDataset

__all__ = [
    "ImageClassificationDataset",
    "MNISTDataset",
    "CIFAR10Dataset",
    "CIFAR100Dataset",
    "ImageFolderDataset",
    "ImageNetDataset",
    "OFRecordImageDataset",
    "GPT2Dataset",
    "GPTDataset",
    "BertDataset",
    "RobertaDataset",
    "T5Dataset",
    "TextClassificationDataset",
    "SyntheticLMDataset",
    "SyntheticImageDataset",
]
