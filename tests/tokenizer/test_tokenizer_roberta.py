"""RobertaTokenizer on the hand-made fixtures/bpe vocabulary.

Ids are the positions in fixtures/bpe/vocab.json: <s>=0 <pad>=1 </s>=2 <unk>=3 h=4 e=5 l=6
o=7 Ġ=8 w=9 r=10 d=11 ... hello=15 ... or=17 ... ld=19 Ġworld=20 !=21 é=22 <mask>=23. The
merges build "hello" and "Ġworld" but not "world" without its space (w + or + ld).
"""
import pickle

import pytest

from libai.tokenizer import GPT2Tokenizer, RobertaTokenizer
from test_tokenizer_file_formats import fixture


@pytest.fixture
def roberta():
    return RobertaTokenizer(fixture("bpe", "vocab.json"), fixture("bpe", "merges.txt"))


def test_special_tokens_are_robertas(roberta):
    assert (roberta.bos_token, roberta.cls_token, roberta.eos_token, roberta.sep_token) == (
        "<s>", "<s>", "</s>", "</s>")
    assert (roberta.bos_token_id, roberta.pad_token_id, roberta.eos_token_id,
            roberta.unk_token_id, roberta.mask_token_id) == (0, 1, 2, 3, 23)
    assert roberta.eod_id == 2
    assert len(roberta) == roberta.vocab_size == 24  # every special token is in the file


def test_known_ids(roberta):
    assert roberta.tokenize("hello world!") == ["hello", "Ġworld", "!"]
    assert roberta.encode("hello world!") == [15, 20, 21]
    assert roberta.encode("world") == [9, 17, 19]  # no leading space: no "Ġworld"
    assert roberta.encode("hello z") == [15, 8, 3]  # "z" is not in the vocabulary: <unk>
    assert roberta.encode("hello <mask>!") == [15, 23, 21]


def test_robertas_layout_for_one_text_and_a_pair(roberta):
    assert roberta.encode("hello", add_special_tokens=True) == [0, 15, 2]
    assert roberta.build_inputs_with_special_tokens([15], [9, 17, 19]) == [0, 15, 2, 2, 9, 17, 19, 2]
    assert roberta.create_token_type_ids_from_sequences([15], [9]) == [0] * 6
    assert roberta.num_special_tokens_to_add() == 2 and roberta.num_special_tokens_to_add(pair=True) == 4
    wrapping = RobertaTokenizer(fixture("bpe", "vocab.json"), fixture("bpe", "merges.txt"),
                                add_bos_token=True)
    assert wrapping.encode("hello world!") == [0, 15, 20, 21, 2]


def test_decode(roberta):
    assert roberta.decode([0, 15, 20, 21, 2]) == "<s> hello world! </s>"
    assert roberta.decode([0, 15, 20, 21, 2], skip_special_tokens=True) == "hello world!"


def test_missing_special_tokens_are_appended_in_role_order():
    tok = RobertaTokenizer(fixture("bpe", "vocab.json"), fixture("bpe", "merges.txt"),
                           unk_token="[U]", mask_token="[M]")
    assert tok.get_added_vocab() == {"[U]": 24, "[M]": 25}
    assert tok.encode("hello z", add_special_tokens=True) == [0, 15, 8, 24, 2]


def test_is_a_gpt2_tokenizer_and_pickles(roberta):
    assert isinstance(roberta, GPT2Tokenizer)
    copy = pickle.loads(pickle.dumps(roberta))
    assert copy.encode("hello world!", add_special_tokens=True) == [0, 15, 20, 21, 2]


def test_save_and_load_pretrained(roberta, tmp_path):
    roberta.add_special_tokens({"additional_special_tokens": ["<sep2>"]})
    roberta.save_pretrained(str(tmp_path))
    again = RobertaTokenizer.from_pretrained(str(tmp_path))
    assert again.get_vocab() == roberta.get_vocab() and again.get_added_vocab() == {"<sep2>": 24}
    assert again.encode("hello<sep2>world") == [15, 24, 9, 17, 19]
