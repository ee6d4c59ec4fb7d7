"""LiBai's module and class names are ours: the same objects, not copies."""
import importlib

import pytest

import libai.tokenizer as tokenizers
from libai.tokenizer import base, bert, gpt2, roberta, t5, unicode_chars, wordpiece


@pytest.mark.parametrize("module, names, home", [
    ("tokenization_bert", ["BertTokenizer", "VOCAB_FILES_NAMES"], bert),
    ("tokenization_bert", ["BasicTokenizer", "WordpieceTokenizer"], wordpiece),
    ("tokenization_gpt2", ["GPT2Tokenizer", "VOCAB_FILES_NAMES"], gpt2),
    ("tokenization_roberta", ["RobertaTokenizer", "VOCAB_FILES_NAMES"], roberta),
    ("tokenization_t5", ["T5Tokenizer", "VOCAB_FILES_NAMES"], t5),
])
def test_modules_hold_our_objects(module, names, home):
    libai_module = importlib.import_module(f"libai.tokenizer.{module}")
    for name in names:
        assert getattr(libai_module, name) is getattr(home, name)


def test_base_names():
    from libai.tokenizer.tokenization_base import (
        PreTrainedTokenizer,
        _is_control,
        _is_punctuation,
        _is_whitespace,
    )

    assert PreTrainedTokenizer is tokenizers.PreTrainedTokenizer is base.BaseTokenizer
    assert _is_control is unicode_chars.is_control
    assert _is_punctuation is unicode_chars.is_punctuation
    assert _is_whitespace is unicode_chars.is_whitespace


def test_vocab_file_names():
    from libai.tokenizer import tokenization_bert, tokenization_gpt2, tokenization_t5

    assert tokenization_bert.VOCAB_FILES_NAMES == {"vocab_file": "vocab.txt"}
    assert tokenization_gpt2.VOCAB_FILES_NAMES == {"vocab_file": "vocab.json",
                                                  "merges_file": "merges.txt"}
    assert tokenization_t5.VOCAB_FILES_NAMES == {"vocab_file": "spiece.model"}


@pytest.mark.parametrize("char, control", [
    ("\x05", True), ("\u200b", True), ("\ue000", True),  # control, format, private use
    ("A", False), (" ", False), ("\t", False), ("\n", False),
])
def test_control_characters_are_berts(char, control):
    assert unicode_chars.is_control(char) is control


def test_padded_vocab_size_is_an_int_that_libai_code_may_call(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhi\n", encoding="utf-8")
    tok = tokenizers.BertTokenizer(str(tmp_path / "vocab.txt"))
    assert tok.padded_vocab_size == 6 and tok.padded_vocab_size + 1 == 7
    assert tok.padded_vocab_size(4) == 8  # LiBai's method spelling
    tok.padded_vocab_size = 64
    assert tok.padded_vocab_size == 64 and tok.padded_vocab_size(4) == 8


class _LiBaiStyle(tokenizers.PreTrainedTokenizer):
    """A tokenizer written the LiBai way: super().__init__ first, its own vocabulary after."""

    def __init__(self, words, **kwargs):
        super().__init__(unk_token="<unk>", **kwargs)
        self.words = ["<unk>"] + list(words)

    @property
    def vocab_size(self):
        return len(self.words)

    def _tokenize(self, text):
        return text.split()

    def _convert_token_to_id(self, token):
        return self.words.index(token) if token in self.words else 0

    def _convert_id_to_token(self, index):
        return self.words[index]


def test_a_libai_style_subclass_works():
    tok = _LiBaiStyle(["a", "b"], pad_token="<pad>")
    assert tok.pad_token_id == 3 and len(tok) == 4 and tok.vocab_size == 3
    assert tok.encode("a b c <pad>") == [1, 2, 0, 3]
    assert tok.decode([1, 2, 3], skip_special_tokens=True) == "a b"
    assert tok.get_vocab() == {"<unk>": 0, "a": 1, "b": 2, "<pad>": 3}
    assert tok.encode("a", return_tensors="np").tolist() == [1]
