"""BERT pre-training data: masked LM over sentence pairs from a sentence-level corpus.

The paths below are placeholders. Make the corpus first (docs/prepare_text_data.md)::

    python tools/preprocess_data.py --input corpus.jsonl --json-keys content \\
        --output-prefix ./data_test/bert_data/loss_compara --split-sentences \\
        --tokenizer-name BertTokenizer --vocab-file ./data_test/bert_data/bert-base-chinese-vocab.txt \\
        --do-lower-case

which writes ``loss_compara_content_sentence.bin/.idx``. Point ``data_prefix`` at your own prefix
with the override ``dataloader.train.dataset.0.data_prefix=...``.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader
from libai.data.datasets.bert_dataset import BertDataset
from libai.tokenizer import BertTokenizer

tokenization = OmegaConf.create()
tokenization.tokenizer = LazyCall(BertTokenizer)(
    vocab_file="./data_test/bert_data/bert-base-chinese-vocab.txt",
    do_lower_case=True,
    do_chinese_wwm=False,
)
tokenization.append_eod = False
tokenization.make_vocab_size_divisible_by = 128

# Made by tools/preprocess_data.py with --split-sentences: the prefix of the .bin/.idx pair.
_data_prefix = "./data_test/bert_data/loss_compara_content_sentence"

_dataset = dict(
    name="bert",
    tokenizer=tokenization.tokenizer,
    data_prefix=_data_prefix,
    max_seq_length=512,
    mask_lm_prob=0.15,
    short_seq_prob=0.1,
    binary_head=True,
    sop=False,
    seed=1234,
    splits_string="949,50,1",
)

dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_nlp_train_loader)(
    dataset=[LazyCall(BertDataset)(split="train", num_samples=None, **_dataset)],
    num_workers=4,
)
dataloader.test = [
    LazyCall(build_nlp_test_loader)(
        dataset=LazyCall(BertDataset)(split="valid", **_dataset),
        num_workers=4,
    ),
]
