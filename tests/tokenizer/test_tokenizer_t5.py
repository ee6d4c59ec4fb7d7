"""T5Tokenizer on fixtures/t5_spiece.model (made by fixtures/make_t5_spiece.py).

The model's pieces, read straight from the file's protobuf below (not through the tokenizer),
are: <pad>=0 </s>=1 <unk>=2 ▁=3 t=4 e=5 h=6 n=7 ▁sa=8 ▁cat=9 o=10 ▁dog=11 ▁a=12 ▁mat=13 ...
s=23 ... (27 pieces). With extra_ids=3 the sentinels count down from the end:
<extra_id_0>=29, <extra_id_1>=28, <extra_id_2>=27.
"""
import pickle

import pytest
from sentencepiece import sentencepiece_model_pb2

from libai.tokenizer import T5Tokenizer
from test_tokenizer_file_formats import fixture

MODEL = fixture("t5_spiece.model")


def _pieces_from_the_file():
    proto = sentencepiece_model_pb2.ModelProto()
    with open(MODEL, "rb") as handle:
        proto.ParseFromString(handle.read())
    return [piece.piece for piece in proto.pieces]


@pytest.fixture
def t5():
    return T5Tokenizer(MODEL, extra_ids=3)


def test_the_fixture_model_is_what_the_docstring_says():
    pieces = _pieces_from_the_file()
    assert len(pieces) == 27
    assert pieces[:14] == ["<pad>", "</s>", "<unk>", "▁", "t", "e", "h", "n", "▁sa", "▁cat", "o",
                           "▁dog", "▁a", "▁mat"]
    assert pieces[23] == "s"


def test_vocabulary_and_sentinels(t5):
    assert t5.vocab_size == len(t5) == 30  # 27 pieces + 3 sentinels; <pad> is in the model
    assert (t5.pad_token_id, t5.eos_token_id, t5.unk_token_id) == (0, 1, 2)
    assert t5.additional_special_tokens == ["<extra_id_0>", "<extra_id_1>", "<extra_id_2>"]
    assert t5.additional_special_tokens_ids == [29, 28, 27]
    assert t5.convert_ids_to_tokens([27, 29]) == ["<extra_id_2>", "<extra_id_0>"]
    vocab = t5.get_vocab()
    assert list(vocab)[:3] == ["<pad>", "</s>", "<unk>"] and vocab["<extra_id_0>"] == 29
    assert [vocab[p] for p in _pieces_from_the_file()] == list(range(27))


def test_known_ids(t5):
    assert t5.tokenize("a dog") == ["▁a", "▁dog"]
    assert t5.encode("a dog") == [12, 11]
    assert t5.encode("the cats") == [3, 4, 6, 5, 9, 23]  # ▁ t h e ▁cat s
    assert t5.encode("a <extra_id_0> dog<extra_id_2>") == [12, 29, 11, 27]
    assert t5.convert_tokens_to_ids(["▁dog", "Z", "<extra_id_7>"]) == [11, 2, 2]  # unknown: <unk>


def test_eos_is_appended_when_asked(t5):
    assert t5.encode("a dog", add_special_tokens=True) == [12, 11, 1]
    assert t5.encode("a dog</s>", add_special_tokens=True) == [12, 11, 1]  # not twice
    assert t5.build_inputs_with_special_tokens([12], [11]) == [12, 1, 11, 1]
    always = T5Tokenizer(MODEL, extra_ids=3, add_bos_token=True)  # LiBai's name for it
    assert always.encode("a dog") == [12, 11, 1]


def test_decode(t5):
    assert t5.decode([12, 11, 1]) == "a dog </s>"
    assert t5.decode([12, 11, 1], skip_special_tokens=True) == "a dog"
    assert t5.decode([12, 29, 11]) == "a <extra_id_0> dog"


def test_pad_missing_from_the_model_gets_the_id_after_the_sentinels():
    tok = T5Tokenizer(MODEL, extra_ids=3, pad_token="<p>")
    assert tok.pad_token_id == 30 and len(tok) == 31 and tok.vocab_size == 30


def test_extra_ids_must_agree_with_additional_special_tokens():
    with pytest.raises(ValueError, match="extra_ids=3 and additional_special_tokens with 1"):
        T5Tokenizer(MODEL, extra_ids=3, additional_special_tokens=["<extra_id_0>", "<x>"])
    tok = T5Tokenizer(MODEL, extra_ids=0, additional_special_tokens=["<x>"])
    assert tok.vocab_size == 27 and tok.convert_tokens_to_ids("<x>") == 27
    with pytest.raises(FileNotFoundError, match="SentencePiece model not found"):
        T5Tokenizer("missing/spiece.model")


def test_save_and_load_pretrained_and_pickle(t5, tmp_path):
    t5.add_tokens(["zebra"])
    t5.save_pretrained(str(tmp_path))
    assert (tmp_path / "spiece.model").read_bytes() == open(MODEL, "rb").read()
    again = T5Tokenizer.from_pretrained(str(tmp_path))
    assert again.vocab_size == 30 and again.get_added_vocab() == {"zebra": 30}
    assert again.encode("a zebra dog") == [12, 30, 11]
    copy = pickle.loads(pickle.dumps(again))
    assert copy.encode("a zebra dog", add_special_tokens=True) == [12, 30, 11, 1]
