"""Tokenizers written against LiBai's base class, as LiBai's projects write them.

LiBai's ``PreTrainedTokenizer(verbose=True, **kwargs)`` takes one positional argument, and its
subclasses assign their special-token ids as plain attributes (``self.cls_id = vocab["[CLS]"]``)
or ask for ``start_token`` / ``end_token``. The QQP project's Chinese whole-word tokenizer does
all of it; the class below is written in the same style, without the project's code.
"""
import collections

import pytest

from libai.tokenizer import BertTokenizer
from libai.tokenizer.tokenization_base import PreTrainedTokenizer

from tokenizer_samples import BERT_TOKENS


class WordTableTokenizer(PreTrainedTokenizer):
    """Splits on spaces and looks words up in a table it owns (not in our vocabulary files)."""

    def __init__(self, words, label="word table"):
        super().__init__(label)  # LiBai's positional ``verbose``
        self.table = collections.OrderedDict((w, i) for i, w in enumerate(words))
        self.cls_id = self.table["[CLS]"]
        self.sep_id = self.table["[SEP]"]
        self.pad_id = self.table["[PAD]"]
        self.unk_id = self.table["[UNK]"]

    @property
    def vocab_size(self):
        return len(self.table)

    def _tokenize(self, text):
        return text.split()

    def _convert_token_to_id(self, token):
        return self.table.get(token, self.unk_id)

    def _convert_id_to_token(self, index):
        return list(self.table)[index]

    @property
    def cls(self):
        return self.cls_id


WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "river", "stone"]


def test_a_libai_style_subclass_assigns_its_ids_after_the_base_constructor():
    tok = WordTableTokenizer(WORDS)
    assert (tok.cls_id, tok.sep_id, tok.pad_id, tok.unk_id) == (2, 3, 0, 1)
    assert tok.cls == 2
    # the ``*_token_id`` spellings answer the same assigned ids
    assert (tok.cls_token_id, tok.pad_token_id) == (2, 0)
    assert tok.convert_tokens_to_ids(tok.tokenize("river stone")) == [4, 5]
    assert tok.verbose == "word table"  # the positional argument is LiBai's ``verbose``


def test_an_assigned_id_wins_over_the_role_token_and_none_restores_it(bert_vocab_file):
    tok = BertTokenizer(bert_vocab_file)
    from_vocab = tok.vocab["[SEP]"]
    assert tok.sep_id == from_vocab
    tok.sep_id = 7
    assert tok.sep_id == tok.sep_token_id == 7
    tok.sep_token_id = None
    assert tok.sep_id == from_vocab
    assert tok.sep_token == "[SEP]"  # assigning an id never renames the token


def test_assigned_ids_are_per_tokenizer(bert_vocab_file):
    first, second = BertTokenizer(bert_vocab_file), BertTokenizer(bert_vocab_file)
    first.mask_id = 3
    assert second.mask_id == second.vocab["[MASK]"] != 3


@pytest.mark.parametrize("bad", ["7", 2.5, True, [1]])
def test_an_assigned_id_must_be_an_integer(bert_vocab_file, bad):
    tok = BertTokenizer(bert_vocab_file)
    with pytest.raises(TypeError, match="cls_id must be an int or None"):
        tok.cls_id = bad


def test_special_tokens_are_keyword_only_after_verbose():
    with pytest.raises(TypeError):
        PreTrainedTokenizer(True, "[UNK]")  # noqa: the second positional would be a token


def test_start_and_end_tokens_are_libais_common_names(bert_vocab_file):
    bert = BertTokenizer(bert_vocab_file)
    assert (bert.start_token, bert.end_token) == ("[CLS]", "[SEP]")
    assert (bert.start_token_id, bert.end_token_id) == (bert.vocab["[CLS]"], bert.vocab["[SEP]"])
    # bos and cls set to different tokens: which one "starts" is unknowable
    bert.bos_token = "[BOS]"
    assert bert.start_token is None and bert.start_token_id is None
    bert.eos_token = "[SEP]"  # the same token under both names is fine
    assert bert.end_token == "[SEP]"
    plain = WordTableTokenizer(WORDS)
    assert plain.start_token is None and plain.end_token_id is None
    assert "[CLS]" in BERT_TOKENS  # the fixture vocabulary has what the asserts above read


def test_convert_to_tensors_is_a_tokenizer_method(bert_vocab_file):
    """A LiBai subclass's own ``encode`` calls ``self.convert_to_tensors`` (ChatGLM's does)."""
    tok = BertTokenizer(bert_vocab_file)
    assert tok.convert_to_tensors([[1, 2], [3, 4]]) == [[1, 2], [3, 4]]
    array = tok.convert_to_tensors([[1, 2], [3, 4]], return_tensors="np")
    assert array.dtype.name == "int64" and array.tolist() == [[1, 2], [3, 4]]
    tensor = tok.convert_to_tensors([5, 6], return_tensors="of")
    assert tensor.tolist() == [5, 6] and not tensor.is_global
