"""The API both tokenizers share: padding, truncation, batches, id conversion, added tokens,
saving. Ids for the BERT vocabulary are listed in test_tokenizer_bert.py."""
import logging
import os
import pickle

import numpy as np
import pytest

from libai.tokenizer import BertTokenizer, GPT2Tokenizer


@pytest.fixture
def bert(bert_vocab_file):
    """Built with add_bos_token=True (LiBai's name): encode() wraps [CLS] ... [SEP] by default."""
    return BertTokenizer(bert_vocab_file, add_bos_token=True)


def test_truncation_keeps_room_for_special_tokens(bert):
    # "hello world ! hello" -> 8 9 10 8; with [CLS]/[SEP] and max_length 4 only two fit.
    assert bert.encode("hello world ! hello", max_length=4, truncation=True) == [2, 8, 9, 3]
    assert bert.encode("hello world ! hello", max_length=2, truncation=True,
                       add_special_tokens=False) == [8, 9]
    # Without truncation, max_length does not cut.
    assert bert.encode("hello world ! hello", max_length=4) == [2, 8, 9, 10, 8, 3]


def test_padding_a_single_text(bert):
    assert bert.encode("hello", max_length=5, padding=True) == [2, 8, 3, 0, 0]
    assert bert.encode("hello", max_length=5, padding="max_length") == [2, 8, 3, 0, 0]
    assert bert.encode("hello", max_length=5, padding="longest") == [2, 8, 3]
    left = BertTokenizer(bert.vocab_file, padding_side="left", add_bos_token=True)
    assert left.encode("hello", max_length=5, padding=True) == [0, 0, 2, 8, 3]


def test_model_max_length_is_the_default_limit(bert_vocab_file):
    tok = BertTokenizer(bert_vocab_file, model_max_length=3, add_bos_token=True)
    assert tok.encode("hello world world", truncation=True) == [2, 8, 3]


def test_batch_encode_pads_to_the_longest_with_a_mask(bert):
    batch = bert.batch_encode(["hello", "hello world !", ""])
    assert batch["input_ids"] == [[2, 8, 3, 0, 0], [2, 8, 9, 10, 3], [2, 3, 0, 0, 0]]
    assert batch["attention_mask"] == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]


def test_batch_encode_modes(bert):
    fixed = bert.batch_encode(["hello", "hello world ! world"], max_length=4, truncation=True,
                              padding="max_length")
    assert fixed["input_ids"] == [[2, 8, 3, 0], [2, 8, 9, 3]]
    assert fixed["attention_mask"] == [[1, 1, 1, 0], [1, 1, 1, 1]]
    ragged = bert.batch_encode(["hello", "hello world"], padding=False)
    assert ragged["input_ids"] == [[2, 8, 3], [2, 8, 9, 3]]
    assert ragged["attention_mask"] == [[1, 1, 1], [1, 1, 1, 1]]
    assert bert.batch_encode([]) == {"input_ids": [], "attention_mask": []}


def test_gpt2_batches_pad_with_endoftext(gpt2):
    batch = gpt2.batch_encode(["Hello world", "Hello"])
    longest = len(gpt2.encode("Hello world"))
    short = gpt2.encode("Hello")
    assert batch["input_ids"][1] == short + [gpt2.eod_id] * (longest - len(short))
    assert batch["attention_mask"][1] == [1] * len(short) + [0] * (longest - len(short))


def test_padding_errors(bert, bpe_files):
    with pytest.raises(ValueError, match="padding needs max_length"):
        bert.encode("hello", padding=True)
    with pytest.raises(ValueError, match="truncation needs max_length"):
        bert.encode("hello", truncation=True)
    with pytest.raises(ValueError, match="max_length=1 leaves no room: 2 special tokens"):
        bert.encode("hello", max_length=1, truncation=True)
    with pytest.raises(ValueError, match="padding must be True, False, 'longest' or 'max_length'"):
        bert.batch_encode(["hello"], padding="sideways")
    with pytest.raises(ValueError, match="padding_side must be 'right' or 'left'"):
        BertTokenizer(bert.vocab_file, padding_side="middle")
    no_pad = GPT2Tokenizer(*bpe_files, pad_token=None)
    with pytest.raises(ValueError, match="has no pad token.*pad_token="):
        no_pad.batch_encode(["a", "bb"])
    with pytest.raises(TypeError, match="use encode\\(\\) for a single str"):
        bert.batch_encode("hello")


def test_id_conversion(bert):
    assert bert.convert_tokens_to_ids("hello") == 8
    assert bert.convert_tokens_to_ids(["hello", "nope"]) == [8, 1]  # unknown -> [UNK]
    assert bert.convert_ids_to_tokens(8) == "hello"
    assert bert.convert_ids_to_tokens([2, 8, 3], skip_special_tokens=True) == ["hello"]
    with pytest.raises(IndexError, match="token id 30 is outside the vocabulary \\(ids 0..29\\)"):
        bert.decode([30])
    with pytest.raises(IndexError, match="token id -1"):
        bert.convert_ids_to_tokens([-1])
    with pytest.raises(TypeError, match="token ids must be integers"):
        bert.decode(["hello"])
    with pytest.raises(TypeError, match="tokenize\\(\\) takes a str"):
        bert.tokenize(b"bytes")


def test_decode_accepts_arrays(bert):
    assert bert.decode(np.array([8, 9])) == "hello world"
    assert bert.decode((8, 9)) == "hello world"
    with pytest.raises(ValueError, match="decode a batch row by row"):
        bert.decode([[8, 9]])


def test_add_tokens(bert):
    assert bert.add_tokens(["<new>", "hello"]) == 1  # "hello" already has an id
    assert len(bert) == 31 and bert.convert_tokens_to_ids("<new>") == 30
    assert bert.tokenize("hello<new>world") == ["hello", "<new>", "world"]
    assert bert.decode([8, 30], skip_special_tokens=True) == "hello <new>"  # not special
    assert bert.get_vocab()["<new>"] == 30
    with pytest.raises(TypeError, match="non-empty strings"):
        bert.add_tokens([""])


def test_gpt2_added_tokens_decode_as_their_text(gpt2, bpe_files):
    tok = GPT2Tokenizer(*bpe_files, additional_special_tokens=["<|sep|>", "⟨中⟩"])
    text = "a<|sep|>b  ⟨中⟩ c"
    ids = tok.encode(text)
    # Whitespace touching an added token goes with it (LiBai's rule): no "Ġ" before "c".
    assert tok.convert_ids_to_tokens(ids) == ["a", "<|sep|>", "b", "⟨中⟩", "c"]
    # decode() puts one space around added tokens ...
    assert tok.decode(ids) == "a <|sep|> b ⟨中⟩ c"
    # Skipped special tokens leave nothing behind, not even their spaces (as in LiBai).
    assert tok.decode(ids, skip_special_tokens=True) == "abc"
    # ... unless asked not to.
    assert tok.decode(ids, spaces_between_special_tokens=False) == "a<|sep|>b⟨中⟩c"


def test_save_vocabulary_round_trip(bert, gpt2, tmp_path):
    (vocab_path,) = bert.save_vocabulary(str(tmp_path / "bert"))
    assert os.path.basename(vocab_path) == "vocab.txt"
    reloaded = BertTokenizer(vocab_path)
    assert reloaded.get_vocab() == bert.get_vocab()
    vocab_json, merges_txt = gpt2.save_vocabulary(str(tmp_path / "gpt2"))
    again = GPT2Tokenizer(vocab_json, merges_txt)
    text = "Hello world, 今天天气 😀"
    assert again.encode(text) == gpt2.encode(text)
    assert again.merges == gpt2.merges and again.encoder == gpt2.encoder


def test_bert_pickles(bert):
    copy = pickle.loads(pickle.dumps(bert))
    assert copy.encode("Unaffable 今天 hello!") == bert.encode("Unaffable 今天 hello!")


def test_unknown_constructor_argument_is_ignored_with_a_warning(bert_vocab_file, caplog):
    # LiBai's configs pass options a tokenizer lacks (do_lower_case to GPT-2): not an error,
    # but a warning that names the argument and the closest real one.
    with caplog.at_level(logging.WARNING, logger="libai.tokenizer.base"):
        tok = BertTokenizer(bert_vocab_file, do_lower_cas=False)
    assert tok.do_lower_case is True
    assert caplog.messages == [
        "BertTokenizer ignores the argument do_lower_cas=False (did you mean 'do_lower_case'?)"
    ]


def test_special_tokens_missing_from_the_file_are_appended(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("hello\nworld\n", encoding="utf-8")
    tok = BertTokenizer(str(vocab))
    # unk, pad, cls, sep, mask join in that order after the file's two tokens.
    assert (tok.unk_id, tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id) == (2, 3, 4, 5, 6)
    assert tok.encode("hello there", add_special_tokens=True) == [4, 0, 2, 5]
    assert tok.encode("hello there") == [0, 2]  # add_bos_token=False: no [CLS]/[SEP]
