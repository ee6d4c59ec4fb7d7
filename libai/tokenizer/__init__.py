"""Tokenizers: text <-> token ids for BERT (WordPiece), GPT-2 and RoBERTa (byte-level BPE) and
T5 (SentencePiece) models, built from local vocabulary files, plus the trainers that make
WordPiece and BPE files; ``AutoTokenizer`` reads a Hugging Face model directory
(``tokenizer.json`` through the ``tokenizers`` package, Llama-2's ``tokenizer.model``), and
every tokenizer renders chat templates (``apply_chat_template``). LiBai's module names (``libai.tokenizer.tokenization_bert`` ...) are
thin aliases of these modules.

>>> from libai.tokenizer import BertTokenizer, GPT2Tokenizer, build_tokenizer
"""
from libai.tokenizer.auto import AutoTokenizer
from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.bert import BertTokenizer
from libai.tokenizer.build import build_tokenizer, pad_vocab_size
from libai.tokenizer.chat_template import ChatTemplateError, render_chat_template
from libai.tokenizer.gpt2 import GPT2Tokenizer
from libai.tokenizer.hf_json import JSONTokenizer
from libai.tokenizer.llama_sp import LlamaSentencePieceTokenizer
from libai.tokenizer.roberta import RobertaTokenizer
from libai.tokenizer.t5 import T5Tokenizer
from libai.tokenizer.trainers import train_bpe, train_vocab, train_wordpiece
from libai.tokenizer.wordpiece import BasicTokenizer, WordpieceTokenizer

#: LiBai's name for the base class every tokenizer derives from.
PreTrainedTokenizer = BaseTokenizer

__all__ = [
    "AutoTokenizer",
    "JSONTokenizer",
    "LlamaSentencePieceTokenizer",
    "BaseTokenizer",
    "PreTrainedTokenizer",
    "BertTokenizer",
    "GPT2Tokenizer",
    "RobertaTokenizer",
    "T5Tokenizer",
    "BasicTokenizer",
    "WordpieceTokenizer",
    "build_tokenizer",
    "ChatTemplateError",
    "render_chat_template",
    "pad_vocab_size",
    "train_bpe",
    "train_wordpiece",
    "train_vocab",
]
