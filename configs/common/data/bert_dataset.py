"""BERT pre-training data: masked LM over sentence pairs from a sentence-level corpus.

The paths below are placeholders. Make the corpus first (docs/prepare_text_data.md)::

    python tools/preprocess_data.py --input corpus.jsonl --json-keys content \\
        --output-prefix ./data_test/bert_data/loss_compara --split-sentences \\
        --tokenizer-name BertTokenizer --vocab-file ./data_test/bert_data/bert-base-chinese-vocab.txt \\
        --do-lower-case

which writes ``loss_compara_content_sentence.bin/.idx``. Point ``data_prefix`` at your own prefix
with the override ``dataloader.train.dataset.0.data_prefix=...``.
"""
from libai.config import LazyCall
from libai.data.datasets.bert_dataset import BertDataset
from libai.tokenizer import BertTokenizer

from .text_pretraining import tokenization_section, train_valid_loaders

# append_eod=False and make_vocab_size_divisible_by=128, as in LiBai (text_pretraining.py)
tokenization = tokenization_section(
    LazyCall(BertTokenizer)(
        vocab_file="./data_test/bert_data/bert-base-chinese-vocab.txt",
        do_lower_case=True,
        do_chinese_wwm=False,
    )
)

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

dataloader = train_valid_loaders(BertDataset, **_dataset)
