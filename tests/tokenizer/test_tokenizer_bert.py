"""BertTokenizer: basic splitting, WordPiece, special tokens, Chinese whole-word marks.

Expected ids are the line numbers of BERT_TOKENS in tokenizer_samples.py:
[PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4 un=5 ##aff=6 ##able=7 hello=8 world=9 !=10 ,=11 .=12
'=13 run=14 ##ning=15 cafe=16 naive=17 今=18 天=19 气=20 ##天=21 [=22 ]=23 a=24 ##a=25 $=26
5=27 ##0=28 emoji=29.
"""
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libai.tokenizer import BasicTokenizer, BertTokenizer, WordpieceTokenizer


@pytest.fixture
def bert(bert_vocab_file):
    return BertTokenizer(bert_vocab_file)


def test_wordpiece_greedy_longest_match(bert):
    assert bert.tokenize("unaffable") == ["un", "##aff", "##able"]
    assert bert.tokenize("running") == ["run", "##ning"]
    assert bert.encode("unaffable", add_special_tokens=True) == [2, 5, 6, 7, 3]
    assert bert.encode("unaffable") == [5, 6, 7]  # as in LiBai: no [CLS]/[SEP] unless asked
    wrapping = BertTokenizer(bert.vocab_file, add_bos_token=True)
    assert wrapping.encode("unaffable") == [2, 5, 6, 7, 3]
    assert wrapping.encode("unaffable", add_special_tokens=False) == [5, 6, 7]


def test_unknown_word_is_one_unk_not_a_partial_match(bert):
    # "un" matches, but nothing continues "##xyz": the whole word becomes [UNK].
    assert bert.tokenize("unxyz hello") == ["[UNK]", "hello"]
    assert bert.encode("xyz", add_special_tokens=False) == [1]


def test_words_longer_than_the_limit_are_unk(bert):
    assert bert.tokenize("a" * 100) == ["a"] + ["##a"] * 99
    assert bert.tokenize("a" * 101) == ["[UNK]"]
    short_limit = BertTokenizer(bert.vocab_file, max_input_chars_per_word=3)
    assert short_limit.tokenize("aaa aaaa") == ["a", "##a", "##a", "[UNK]"]


def test_lower_case_and_accents(bert, bert_vocab_file):
    assert bert.tokenize("UnAffable HELLO") == ["un", "##aff", "##able", "hello"]
    assert bert.tokenize("Café NAÏVE") == ["cafe", "naive"]
    keep_accents = BertTokenizer(bert_vocab_file, strip_accents=False)
    assert keep_accents.tokenize("Café") == ["[UNK]"]  # "café" is not in the vocabulary
    cased = BertTokenizer(bert_vocab_file, do_lower_case=False)
    assert cased.tokenize("Hello hello") == ["[UNK]", "hello"]
    # Accents can be stripped without lower-casing.
    cased_stripped = BertTokenizer(bert_vocab_file, do_lower_case=False, strip_accents=True)
    assert cased_stripped.tokenize("café") == ["cafe"]
    # A decomposed accent (e + U+0301) is the same word as the composed character.
    assert BasicTokenizer(do_lower_case=False).tokenize("Cafe\u0301") == ["Caf\u00e9"]
    assert bert.tokenize("CAFE\u0301") == ["cafe"]


def test_punctuation_runs_split_into_single_marks(bert):
    assert bert.tokenize("hello!!!world...") == ["hello", "!", "!", "!", "world", ".", ".", "."]
    assert bert.tokenize("hello'world") == ["hello", "'", "world"]
    # ASCII symbols such as "$" count as punctuation; digits then go through WordPiece.
    assert bert.tokenize("$50") == ["$", "5", "##0"]


def test_cjk_characters_become_single_tokens(bert):
    assert bert.tokenize("今天气") == ["今", "天", "气"]
    assert bert.tokenize("hello今天world") == ["hello", "今", "天", "world"]
    assert bert.encode("今天气", add_special_tokens=False) == [18, 19, 20]
    no_split = BertTokenizer(bert.vocab_file, tokenize_chinese_chars=False)
    assert no_split.tokenize("今天气") == ["[UNK]"]  # one unknown three-character word


def test_control_characters_and_odd_whitespace(bert):
    # NUL, a zero-width space (format char) and BEL vanish; tab, newline, ideographic space split.
    assert bert.tokenize("hel\x00lo\u200b wor\x07ld") == ["hello", "world"]
    assert bert.tokenize("  hello \t\n\u3000   world  ") == ["hello", "world"]
    assert bert.tokenize(" " * 1000 + "hello" + "\n" * 1000) == ["hello"]


def test_empty_and_blank_text(bert):
    assert bert.tokenize("") == []
    assert bert.tokenize(" \t\n ") == []
    assert bert.encode("", add_special_tokens=True) == [2, 3]
    assert bert.encode("", add_special_tokens=False) == []
    assert bert.decode([]) == ""


def test_emoji_is_unknown_but_does_not_swallow_neighbours(bert):
    assert bert.tokenize("emoji 😀 hello") == ["emoji", "[UNK]", "hello"]


def test_special_tokens_in_text_are_never_split(bert):
    assert bert.tokenize("hello [MASK] world") == ["hello", "[MASK]", "world"]
    assert bert.tokenize("[MASK][SEP]") == ["[MASK]", "[SEP]"]
    # Lower-case spelling is not the special token: it is split like any text.
    assert bert.tokenize("[mask]") == ["[", "[UNK]", "]"]
    assert bert.encode("a [MASK] a", add_special_tokens=False) == [24, 4, 24]


def test_special_token_ids(bert):
    assert (bert.cls_id, bert.cls_token_id, bert.sep_id, bert.mask_id) == (2, 2, 3, 4)
    assert (bert.pad_id, bert.unk_id, bert.eod_id, bert.eod) == (0, 1, 3, 3)
    assert bert.eos_token_id is None and bert.bos_token_id is None
    assert bert.vocab_size == len(bert) == 30
    assert bert.all_special_ids == [0, 1, 2, 3, 4]
    assert bert.all_special_tokens == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_extra_special_tokens_get_new_ids_and_stay_whole(bert_vocab_file):
    tok = BertTokenizer(
        bert_vocab_file, bos_token="[BOS]", eos_token="[EOS]",
        additional_special_tokens=["<extra_id_0>"],
    )
    assert (tok.bos_id, tok.eos_id, tok.convert_tokens_to_ids("<extra_id_0>")) == (30, 31, 32)
    # vocab_size counts the file (LiBai's meaning), len() every id.
    assert len(tok) == 33 and tok.vocab_size == tok.base_vocab_size == 30
    assert tok.get_added_vocab() == {"[BOS]": 30, "[EOS]": 31, "<extra_id_0>": 32}
    assert tok.tokenize("a<extra_id_0>a") == ["a", "<extra_id_0>", "a"]
    assert tok.decode([24, 32, 31], skip_special_tokens=True) == "a"
    assert tok.eod_id == 3  # BERT's document separator stays [SEP]


def test_decode_joins_pieces_and_chinese(bert):
    ids = bert.encode("Unaffable hello, world! 今天气", add_special_tokens=True)
    # Spaces before punctuation are cleaned up by default (BERT lost the spacing anyway).
    assert bert.decode(ids) == "[CLS] unaffable hello, world! 今天气 [SEP]"
    assert bert.decode(ids, skip_special_tokens=True) == "unaffable hello, world! 今天气"
    raw = bert.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
    assert raw == "unaffable hello , world ! 今天气"
    assert bert.convert_ids_to_tokens(ids[1:4]) == ["un", "##aff", "##able"]


def test_never_split_words_are_kept_verbatim(bert_vocab_file):
    basic = BasicTokenizer(never_split=["[X]"])
    assert basic.tokenize("A [X] b!") == ["a", "[X]", "b", "!"]
    tok = BertTokenizer(bert_vocab_file, never_split=["HeLLo"])
    assert tok.tokenize("HeLLo hello") == ["HeLLo", "hello"]
    assert tok.encode("HeLLo", add_special_tokens=False) == [1]  # kept whole, unknown id


def test_wordpiece_tokenizer_alone():
    wordpiece = WordpieceTokenizer({"play": 0, "##ing": 1, "##s": 2, "[UNK]": 3}, "[UNK]")
    assert wordpiece.tokenize("playing plays players") == ["play", "##ing", "play", "##s", "[UNK]"]


def _max_match(words):
    """A tiny dictionary segmenter for the whole-word tests."""
    def segment(run):
        out, start = [], 0
        while start < len(run):
            end = next(e for e in range(len(run), start, -1)
                       if run[start:e] in words or e == start + 1)
            out.append(run[start:end])
            start = end
        return out
    return segment


def test_chinese_whole_word_marks(bert_vocab_file):
    tok = BertTokenizer(bert_vocab_file, do_chinese_wwm=True,
                        chinese_word_segmenter=_max_match({"今天", "天气"}))
    assert tok.tokenize("今天天气 hello") == ["今", "##天", "天", "##气", "hello"]
    # The mark is for masking only: ##天 keeps 天's id (19), not the vocabulary's "##天" (21).
    assert tok.encode("今天天气", add_special_tokens=False) == [18, 19, 19, 20]
    assert tok.decode(tok.encode("今天天气", add_special_tokens=False)) == "今天天气"


def test_chinese_whole_word_errors(bert_vocab_file, monkeypatch):
    monkeypatch.setitem(sys.modules, "jieba", None)  # make `import jieba` fail
    with pytest.raises(ImportError, match="pip install jieba"):
        BertTokenizer(bert_vocab_file, do_chinese_wwm=True)
    bad = BertTokenizer(bert_vocab_file, do_chinese_wwm=True,
                        chinese_word_segmenter=lambda s: ["x"])
    with pytest.raises(ValueError, match="join back into its input"):
        bad.tokenize("今天")
    with pytest.raises(ValueError, match="tokenize_chinese_chars=True"):
        BertTokenizer(bert_vocab_file, do_chinese_wwm=True, tokenize_chinese_chars=False,
                      chinese_word_segmenter=list)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=40))
def test_any_text_becomes_vocabulary_tokens(bert, text):
    tokens = bert.tokenize(text)
    vocab = bert.get_vocab()
    assert all(token in vocab for token in tokens)
    assert not any(char.isspace() for token in tokens for char in token)
    ids = bert.encode(text, add_special_tokens=True)
    assert ids[0] == bert.cls_id and ids[-1] == bert.sep_id and len(ids) == len(tokens) + 2
