"""Datasets, one module per family. Every ``__getitem__`` returns an
:class:`~libai.data.structures.Instance` whose field names are the model's ``forward`` arguments.

The names load their module on first use (:mod:`libai.utils.lazy_exports`): a tool that needs
one family (``tools/make_digits_mnist.py``) does not import the others.
"""
from typing import TYPE_CHECKING

from libai.utils.lazy_exports import lazy_exports

_EXPORTS = {
    "CIFAR10Dataset": "libai.data.datasets.cifar",
    "CIFAR100Dataset": "libai.data.datasets.cifar",
    "ImageClassificationDataset": "libai.data.datasets.image_base",
    "ImageFolderDataset": "libai.data.datasets.imagefolder",
    "ImageNetDataset": "libai.data.datasets.imagenet",
    "MNISTDataset": "libai.data.datasets.mnist",
    "OFRecordImageDataset": "libai.data.datasets.ofrecord",
    "BertDataset": "libai.data.datasets.bert_dataset",
    "GPT2Dataset": "libai.data.datasets.gpt_dataset",
    "GPTDataset": "libai.data.datasets.gpt_dataset",
    "RobertaDataset": "libai.data.datasets.roberta_dataset",
    "SyntheticImageDataset": "libai.data.datasets.synthetic",
    "SyntheticLMDataset": "libai.data.datasets.synthetic",
    "T5Dataset": "libai.data.datasets.t5_dataset",
    "TextClassificationDataset": "libai.data.datasets.text_classification",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from libai.data.datasets.cifar import CIFAR10Dataset, CIFAR100Dataset  # noqa: F401
    from libai.data.datasets.image_base import ImageClassificationDataset  # noqa: F401
    from libai.data.datasets.imagefolder import ImageFolderDataset  # noqa: F401
    from libai.data.datasets.imagenet import ImageNetDataset  # noqa: F401
    from libai.data.datasets.mnist import MNISTDataset  # noqa: F401
    from libai.data.datasets.ofrecord import OFRecordImageDataset  # noqa: F401
    from libai.data.datasets.bert_dataset import BertDataset  # noqa: F401
    from libai.data.datasets.gpt_dataset import GPT2Dataset, GPTDataset  # noqa: F401
    from libai.data.datasets.roberta_dataset import RobertaDataset  # noqa: F401
    from libai.data.datasets.synthetic import SyntheticImageDataset, SyntheticLMDataset  # noqa: F401
    from libai.data.datasets.t5_dataset import T5Dataset  # noqa: F401
    from libai.data.datasets.text_classification import TextClassificationDataset  # noqa: F401
