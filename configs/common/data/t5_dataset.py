"""T5 pre-training data: span corruption with sentinel tokens over a sentence-level corpus.

The paths below are placeholders. Make the corpus first (docs/prepare_text_data.md)::

    python tools/preprocess_data.py --input corpus.jsonl --json-keys content \\
        --output-prefix ./data_test/bert_data/loss_compara --split-sentences \\
        --tokenizer-name BertTokenizer --vocab-file ./data_test/bert_data/bert-base-chinese-vocab.txt \\
        --do-lower-case

The tokenizer adds 100 sentinels ``<extra_id_0..99>`` and ``[BOS]``/``[EOS]`` to the vocabulary;
the dataset finds them through the tokenizer.
"""
from libai.config import LazyCall
from libai.data.data_utils import get_indexed_dataset
from libai.data.datasets.t5_dataset import T5Dataset
from libai.tokenizer import BertTokenizer

from .text_pretraining import tokenization_section, train_valid_loaders

# append_eod=False and make_vocab_size_divisible_by=128, as in LiBai (text_pretraining.py)
tokenization = tokenization_section(
    LazyCall(BertTokenizer)(
        vocab_file="./data_test/bert_data/bert-base-chinese-vocab.txt",
        do_lower_case=True,
        do_chinese_wwm=False,
        bos_token="[BOS]",
        eos_token="[EOS]",
        additional_special_tokens=[f"<extra_id_{i}>" for i in range(100)],
    )
)

# Made by tools/preprocess_data.py with --split-sentences: the prefix of the .bin/.idx pair.
_data_prefix = "./data_test/bert_data/loss_compara_content_sentence"

_dataset = dict(
    name="t5",
    tokenizer=tokenization.tokenizer,
    data_prefix=_data_prefix,
    # LiBai's layout: the corpus is also named in an ``indexed_dataset`` node (LiBai's projects
    # set both paths); by default it follows the dataset's ``data_prefix``
    indexed_dataset=LazyCall(get_indexed_dataset)(
        data_prefix="${..data_prefix}", data_impl="mmap", skip_warmup=False
    ),
    max_seq_length=512,
    max_seq_length_dec=128,
    noise_density=0.15,
    mean_span_length=3.0,
    seed=1234,
    splits_string="949,50,1",
)

dataloader = train_valid_loaders(T5Dataset, **_dataset)
