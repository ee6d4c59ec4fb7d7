"""GPT-2 pre-training data: contiguous token windows over a preprocessed corpus.

The paths below are placeholders. Make the corpus first (docs/prepare_text_data.md)::

    python tools/preprocess_data.py --input corpus.jsonl --json-keys content \\
        --output-prefix ./data_test/gpt_data/loss_compara --split-sentences --append-eod \\
        --tokenizer-name GPT2Tokenizer --vocab-file ./data_test/gpt_data/gpt2-vocab.json \\
        --merges-file ./data_test/gpt_data/gpt2-merges.txt

which writes ``loss_compara_content_sentence.bin/.idx`` (``_document`` without
``--split-sentences``; GPT reads either). Point ``data_prefix`` at your own prefix with the
override ``dataloader.train.dataset.0.data_prefix=...``. Keep ``max_seq_length`` equal to the
model's.
"""
from libai.config import LazyCall
from libai.data.data_utils import get_indexed_dataset
from libai.data.datasets.gpt_dataset import GPT2Dataset
from libai.tokenizer import GPT2Tokenizer

from .text_pretraining import tokenization_section, train_valid_loaders

# append_eod=False and make_vocab_size_divisible_by=128, as in LiBai (text_pretraining.py)
tokenization = tokenization_section(
    LazyCall(GPT2Tokenizer)(
        vocab_file="./data_test/gpt_data/gpt2-vocab.json",
        merges_file="./data_test/gpt_data/gpt2-merges.txt",
    )
)

# Made by tools/preprocess_data.py (see above): the prefix of the .bin/.idx pair.
_data_prefix = "./data_test/gpt_data/loss_compara_content_sentence"
# LiBai's layout: each dataset also names its corpus in an ``indexed_dataset`` node, and LiBai's
# projects set both paths. Here the node follows the dataset's ``data_prefix`` by default.
_indexed = LazyCall(get_indexed_dataset)(
    data_prefix="${..data_prefix}", data_impl="mmap", skip_warmup=False
)

dataloader = train_valid_loaders(
    GPT2Dataset,
    name="gpt-2",
    data_prefix=_data_prefix,
    indexed_dataset=_indexed,
    max_seq_length=1024,
    seed=1234,
    splits_string="949,50,1",
)
