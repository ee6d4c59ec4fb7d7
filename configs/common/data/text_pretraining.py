"""What the text pre-training data configs share (imported by ``gpt_dataset.py``,
``bert_dataset.py``, ``roberta_dataset.py`` and ``t5_dataset.py``; not a config by itself).

Each of them declares a ``tokenization`` section and a ``dataloader`` whose training set is the
``"train"`` split of one corpus and whose single test set is its ``"valid"`` split; only the
tokenizer, the dataset class and the dataset's arguments differ, and those stay in each file.
"""
from omegaconf import DictConfig, OmegaConf

from libai.config import LazyCall
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader


def tokenization_section(tokenizer: DictConfig) -> DictConfig:
    """``tokenization`` as LiBai's configs spell it: the tokenizer node, no end-of-document token
    appended, and the embedding rows rounded up to a multiple of 128."""
    tokenization = OmegaConf.create()
    tokenization.tokenizer = tokenizer
    tokenization.append_eod = False
    tokenization.make_vocab_size_divisible_by = 128
    return tokenization


def train_valid_loaders(dataset_class: type, **dataset: object) -> DictConfig:
    """``dataloader.train`` over ``dataset_class(split="train", num_samples=None, **dataset)``
    (one pass over the split; the training sampler cycles epochs) and ``dataloader.test`` over
    its ``split="valid"`` part, 4 loader workers each."""
    dataloader = OmegaConf.create()
    dataloader.train = LazyCall(build_nlp_train_loader)(
        dataset=[LazyCall(dataset_class)(split="train", num_samples=None, **dataset)],
        num_workers=4,
    )
    dataloader.test = [
        LazyCall(build_nlp_test_loader)(
            dataset=LazyCall(dataset_class)(split="valid", **dataset),
            num_workers=4,
        ),
    ]
    return dataloader
