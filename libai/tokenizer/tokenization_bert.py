"""LiBai's ``libai.tokenizer.tokenization_bert``: names for :mod:`libai.tokenizer.bert` and
:mod:`libai.tokenizer.wordpiece`."""
from libai.tokenizer.bert import VOCAB_FILES_NAMES, BertTokenizer
from libai.tokenizer.wordpiece import BasicTokenizer, WordpieceTokenizer

PRETRAINED_VOCAB_FILES_MAP = BertTokenizer.pretrained_vocab_files_map
PRETRAINED_POSITIONAL_EMBEDDINGS_SIZES = BertTokenizer.max_model_input_sizes
PRETRAINED_INIT_CONFIGURATION = BertTokenizer.pretrained_init_configuration

__all__ = [
    "VOCAB_FILES_NAMES",
    "PRETRAINED_VOCAB_FILES_MAP",
    "PRETRAINED_POSITIONAL_EMBEDDINGS_SIZES",
    "PRETRAINED_INIT_CONFIGURATION",
    "BertTokenizer",
    "BasicTokenizer",
    "WordpieceTokenizer",
]
