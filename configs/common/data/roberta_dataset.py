"""RoBERTa pre-training data: masked LM over runs of sentences, no sentence-pair task.

The paths below are placeholders. Make the corpus first (docs/prepare_text_data.md)::

    python tools/preprocess_data.py --input corpus.jsonl --json-keys content \\
        --output-prefix ./data_test/roberta_data/loss_compara --split-sentences \\
        --tokenizer-name RobertaTokenizer --vocab-file ./data_test/roberta_data/roberta-vocab.json \\
        --merges-file ./data_test/roberta_data/roberta-merges.txt

which writes ``loss_compara_content_sentence.bin/.idx``. Point ``data_prefix`` at your own prefix
with the override ``dataloader.train.dataset.0.data_prefix=...``; keep ``max_seq_length`` at
most ``max_position_embeddings - pad_token_id - 1`` (512 for RoBERTa's 514 positions).
"""
from libai.config import LazyCall
from libai.data.datasets.roberta_dataset import RobertaDataset
from libai.tokenizer import RobertaTokenizer

from .text_pretraining import tokenization_section, train_valid_loaders

# append_eod=False and make_vocab_size_divisible_by=128, as in LiBai (text_pretraining.py)
tokenization = tokenization_section(
    LazyCall(RobertaTokenizer)(
        vocab_file="./data_test/roberta_data/roberta-vocab.json",
        merges_file="./data_test/roberta_data/roberta-merges.txt",
    )
)

# Made by tools/preprocess_data.py with --split-sentences: the prefix of the .bin/.idx pair.
_data_prefix = "./data_test/roberta_data/loss_compara_content_sentence"

_dataset = dict(
    name="roberta",
    tokenizer=tokenization.tokenizer,
    data_prefix=_data_prefix,
    max_seq_length=512,
    mask_lm_prob=0.15,
    short_seq_prob=0.0,
    seed=1234,
    masking_style="bert",
    splits_string="949,50,1",
)

dataloader = train_valid_loaders(RobertaDataset, **_dataset)
