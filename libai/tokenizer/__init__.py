"""Tokenizers: text <-> token ids for BERT-style (WordPiece) and GPT-style (byte-level BPE)
models, built from local vocabulary files, plus the trainers that make those files.

>>> from libai.tokenizer import BertTokenizer, GPT2Tokenizer, build_tokenizer
"""
from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.bert import BertTokenizer
from libai.tokenizer.build import build_tokenizer, pad_vocab_size
from libai.tokenizer.gpt2 import GPT2Tokenizer
from libai.tokenizer.trainers import train_bpe, train_vocab, train_wordpiece
from libai.tokenizer.wordpiece import BasicTokenizer, WordpieceTokenizer

__all__ = [
    "BaseTokenizer",
    "BertTokenizer",
    "GPT2Tokenizer",
    "BasicTokenizer",
    "WordpieceTokenizer",
    "build_tokenizer",
    "pad_vocab_size",
    "train_bpe",
    "train_wordpiece",
    "train_vocab",
]
