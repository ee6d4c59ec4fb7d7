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
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader
from libai.data.datasets.roberta_dataset import RobertaDataset
from libai.tokenizer import RobertaTokenizer

tokenization = OmegaConf.create()
tokenization.tokenizer = LazyCall(RobertaTokenizer)(
    vocab_file="./data_test/roberta_data/roberta-vocab.json",
    merges_file="./data_test/roberta_data/roberta-merges.txt",
)
tokenization.append_eod = False
tokenization.make_vocab_size_divisible_by = 128

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

dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_nlp_train_loader)(
    dataset=[LazyCall(RobertaDataset)(split="train", num_samples=None, **_dataset)],
    num_workers=4,
)
dataloader.test = [
    LazyCall(build_nlp_test_loader)(
        dataset=LazyCall(RobertaDataset)(split="valid", **_dataset),
        num_workers=4,
    ),
]
