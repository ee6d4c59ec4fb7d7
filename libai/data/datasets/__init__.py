"""Datasets, one module per family. Every ``__getitem__`` returns an
:class:`~libai.data.structures.Instance` whose field names are the model's ``forward`` arguments.

The names load their module on first use (:mod:`libai.utils.lazy_exports`): a tool that needs
one family (``tools/make_digits_mnist.py``) does not import the others.
"""
from typing import TYPE_CHECKING

from libai.utils.lazy_exports import lazy_exports

_MODULES = {  # module -> the names it defines
    "libai.data.datasets.cifar": ["CIFAR10Dataset", "CIFAR100Dataset"],
    "libai.data.datasets.image_base": ["ImageClassificationDataset"],
    "libai.data.datasets.imagefolder": ["ImageFolderDataset"],
    "libai.data.datasets.imagenet": ["ImageNetDataset"],
    "libai.data.datasets.mnist": ["MNISTDataset"],
    "libai.data.datasets.ofrecord": ["OFRecordImageDataset"],
    "libai.data.datasets.bert_dataset": ["BertDataset"],
    "libai.data.datasets.gpt_dataset": ["GPT2Dataset", "GPTDataset"],
    "libai.data.datasets.roberta_dataset": ["RobertaDataset"],
    "libai.data.datasets.synthetic": ["SyntheticImageDataset", "SyntheticLMDataset"],
    "libai.data.datasets.t5_dataset": ["T5Dataset"],
    "libai.data.datasets.text_classification": ["TextClassificationDataset"],
    "libai.data.datasets.sft": ["SFTDataset"],
    "libai.data.datasets.instruction": ["InstructionDataset"],
    "libai.data.datasets.chat": ["ChatDataset"],
    "libai.data.datasets.packing": ["PackedDataset", "PadCollate"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)

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
    from libai.data.datasets.sft import SFTDataset  # noqa: F401
    from libai.data.datasets.instruction import InstructionDataset  # noqa: F401
    from libai.data.datasets.chat import ChatDataset  # noqa: F401
    from libai.data.datasets.packing import PackedDataset, PadCollate  # noqa: F401
