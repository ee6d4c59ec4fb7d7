"""LiBai's ``libai.tokenizer.tokenization_gpt2``: names for :mod:`libai.tokenizer.gpt2` and
:mod:`libai.tokenizer.byte_level`."""
from libai.tokenizer.byte_level import bytes_to_unicode
from libai.tokenizer.gpt2 import VOCAB_FILES_NAMES, GPT2Tokenizer

PRETRAINED_VOCAB_FILES_MAP = GPT2Tokenizer.pretrained_vocab_files_map
PRETRAINED_POSITIONAL_EMBEDDINGS_SIZES = GPT2Tokenizer.max_model_input_sizes

__all__ = [
    "VOCAB_FILES_NAMES",
    "PRETRAINED_VOCAB_FILES_MAP",
    "PRETRAINED_POSITIONAL_EMBEDDINGS_SIZES",
    "GPT2Tokenizer",
    "bytes_to_unicode",
]
