"""Sentence classification data: JSON-lines files of ``{"text": ..., "label": ...}``.

The paths below are placeholders; docs/prepare_text_data.md shows the file format. Examples are
``[CLS] text [SEP]`` padded to ``max_seq_length`` (``text_pair_key="text_b"`` for sentence pairs).
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader
from libai.data.datasets.text_classification import TextClassificationDataset
from libai.tokenizer import BertTokenizer

tokenization = OmegaConf.create()
tokenization.tokenizer = LazyCall(BertTokenizer)(
    vocab_file="./data_test/bert_data/bert-base-chinese-vocab.txt",
    do_lower_case=True,
)
tokenization.append_eod = False
tokenization.make_vocab_size_divisible_by = 128

dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_nlp_train_loader)(
    dataset=[
        LazyCall(TextClassificationDataset)(
            data_file="./data/text_classification/train.jsonl",
            tokenizer=tokenization.tokenizer,
            max_seq_length=128,
        ),
    ],
    num_workers=4,
)
dataloader.test = [
    LazyCall(build_nlp_test_loader)(
        dataset=LazyCall(TextClassificationDataset)(
            data_file="./data/text_classification/dev.jsonl",
            tokenizer=tokenization.tokenizer,
            max_seq_length=128,
        ),
        num_workers=4,
    ),
]
