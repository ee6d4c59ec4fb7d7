"""LiBai's ``libai.tokenizer.tokenization_t5``: names for :mod:`libai.tokenizer.t5`."""
from libai.tokenizer.t5 import VOCAB_FILES_NAMES, T5Tokenizer

PRETRAINED_VOCAB_FILES_MAP = T5Tokenizer.pretrained_vocab_files_map
PRETRAINED_POSITIONAL_EMBEDDINGS_SIZES = T5Tokenizer.max_model_input_sizes

__all__ = [
    "VOCAB_FILES_NAMES",
    "PRETRAINED_VOCAB_FILES_MAP",
    "PRETRAINED_POSITIONAL_EMBEDDINGS_SIZES",
    "T5Tokenizer",
]
