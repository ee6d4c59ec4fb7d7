"""LiBai's ``libai.tokenizer.tokenization_roberta``: names for :mod:`libai.tokenizer.roberta`."""
from libai.tokenizer.byte_level import bytes_to_unicode
from libai.tokenizer.roberta import VOCAB_FILES_NAMES, RobertaTokenizer

PRETRAINED_VOCAB_FILES_MAP = RobertaTokenizer.pretrained_vocab_files_map
PRETRAINED_POSITIONAL_EMBEDDINGS_SIZES = RobertaTokenizer.max_model_input_sizes

__all__ = [
    "VOCAB_FILES_NAMES",
    "PRETRAINED_VOCAB_FILES_MAP",
    "PRETRAINED_POSITIONAL_EMBEDDINGS_SIZES",
    "RobertaTokenizer",
    "bytes_to_unicode",
]
