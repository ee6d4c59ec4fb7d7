"""GPT2Tokenizer: the byte alphabet, pre-tokenization, merge order, round trips."""
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libai.tokenizer import GPT2Tokenizer
from libai.tokenizer.byte_level import bytes_to_unicode, pretokenize, unicode_to_bytes
from libai.tokenizer.gpt2 import apply_merges
from libai.tokenizer.vocab_files import save_bpe_vocab, save_merges

# Hand-made merges. With single bytes at ids 0..255 (id == byte value), the merged tokens get
# ids 256.. in this order and <|endoftext|> comes last.
MERGES = [("H", "e"), ("l", "l"), ("He", "ll"), ("Hell", "o"), ("Ġ", "w"), ("o", "r"),
          ("Ġw", "or"), ("l", "d"), ("Ġwor", "ld")]
HELLO, GWORLD, OR, LD, LL, EOD = 259, 264, 261, 263, 257, 265


@pytest.fixture
def hand_made(tmp_path):
    byte_chars = [bytes_to_unicode()[b] for b in range(256)]
    tokens = byte_chars + [a + b for a, b in MERGES] + ["<|endoftext|>"]
    vocab = {token: index for index, token in enumerate(tokens)}
    return GPT2Tokenizer(save_bpe_vocab(vocab, str(tmp_path)), save_merges(MERGES, str(tmp_path)))


def test_byte_alphabet():
    mapping = bytes_to_unicode()
    assert len(set(mapping.values())) == 256
    assert mapping[ord("A")] == "A" and mapping[ord("~")] == "~"
    assert mapping[ord(" ")] == "Ġ" and mapping[0] == "Ā" and mapping[ord("\n")] == "Ċ"
    assert all(ch.isprintable() and not ch.isspace() for ch in mapping.values())
    assert all(unicode_to_bytes()[ch] == b for b, ch in mapping.items())


@pytest.mark.parametrize("text, pieces", [
    ("Hello world's  end", ["Hello", " world", "'s", " ", " end"]),
    ("I'll pay 42 times!!", ["I", "'ll", " pay", " 42", " times", "!!"]),
    ("a\n\nb", ["a", "\n", "\n", "b"]),
    ("x   ", ["x", "   "]),
    # letters / numbers / symbols, by Unicode category
    ("中文abc ٣² 😀!", ["中文abc", " ٣²", " 😀!"]),
    ("a\x1cb", ["a", "\x1c", "b"]),  # U+001C is a symbol to GPT-2, not whitespace
    ("\u00a0x \u3000y", ["\u00a0", "x", " ", "\u3000", "y"]),  # only U+0020 attaches to a word
    ("", []),
])
def test_pretokenize_known_cuts(text, pieces):
    assert pretokenize(text) == pieces


def test_apply_merges_follows_rank_order():
    ranks = {pair: rank for rank, pair in enumerate(MERGES)}
    assert apply_merges("Hello", ranks) == ["Hello"]
    assert apply_merges("hello", ranks) == ["h", "e", "ll", "o"]  # ("e", "ll") is not a merge
    assert apply_merges("Ġworld", ranks) == ["Ġworld"]
    assert apply_merges("world", ranks) == ["w", "or", "ld"]


def test_known_encodings(hand_made):
    assert hand_made.encode("Hello world") == [HELLO, GWORLD]
    # The space before "world" attaches to it; the extra space stands alone.
    assert hand_made.encode("Hello  world!") == [HELLO, 32, GWORLD, 33]
    assert hand_made.encode("hello") == [104, 101, LL, 111]
    assert hand_made.encode("é") == [0xC3, 0xA9]  # two UTF-8 bytes, one token each
    assert hand_made.tokenize("Hello world") == ["Hello", "Ġworld"]


def test_endoftext_is_one_token_and_special(hand_made):
    assert hand_made.encode("Hello<|endoftext|>world") == [HELLO, EOD, 119, OR, LD]
    assert hand_made.eod_id == hand_made.eod == hand_made.eos_token_id == EOD
    assert hand_made.pad_id == EOD and hand_made.unk_id == EOD
    assert hand_made.cls_id is None and hand_made.sep_id is None and hand_made.mask_id is None
    # Whitespace next to an added token goes with the token (LiBai's rule) ...
    assert hand_made.encode("Hello <|endoftext|> world") == [HELLO, EOD, 119, OR, LD]
    # ... and decode() puts one space on each side of it ("Ġworld" brings its own as well).
    assert hand_made.decode([HELLO, EOD, GWORLD]) == "Hello <|endoftext|>  world"
    assert hand_made.decode([HELLO, EOD, GWORLD], spaces_between_special_tokens=False) == (
        "Hello<|endoftext|> world")
    assert hand_made.decode([HELLO, EOD, GWORLD], skip_special_tokens=True) == "Hello world"
    # With special tokens GPT-2 opens a text with bos (LiBai's layout); not by default.
    assert hand_made.encode("Hello") == [HELLO]
    assert hand_made.encode("Hello", add_special_tokens=True) == [EOD, HELLO]


def test_decode_of_a_cut_character_uses_replacement(hand_made):
    assert hand_made.decode([0xC3]) == "\ufffd"
    assert hand_made.decode([0xC3, 0xA9]) == "é"


@pytest.mark.parametrize("text", [
    "",
    "Hello world",
    "  leading and trailing  ",
    "Café naïve 你好世界 こんにちは 😀👍🏽 \t\n\r\x00\x07\u200b\ufeff",
    "!!!???...,,,;;;" * 20,
    "x" * 5000,
    " " * 300 + "\n" * 300,
])
def test_round_trip_tricky_text(gpt2, text):
    assert gpt2.decode(gpt2.encode(text)) == text


def _spaced_around(token, text):
    """What decode(encode(text)) gives for text holding ``token``: each piece between tokens
    loses the whitespace touching a token, empty pieces vanish, and everything is joined with
    single spaces."""
    pieces = text.split(token)
    out = []
    for index, piece in enumerate(pieces):
        if index > 0:
            out.append(token)
            piece = piece.lstrip()
        if index < len(pieces) - 1:
            piece = piece.rstrip()
        if piece:
            out.append(piece)
    return " ".join(out)


def test_round_trip_with_special_tokens_normalizes_their_spacing(gpt2):
    text = "<|endoftext|><|endoftext|>text  <|endoftext|>\n more"
    assert gpt2.decode(gpt2.encode(text)) == "<|endoftext|> <|endoftext|> text <|endoftext|> more"


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60))
def test_round_trip_property(gpt2, text):
    ids = gpt2.encode(text)
    assert all(0 <= i < gpt2.vocab_size for i in ids)
    assert gpt2.decode(ids) == text


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.one_of(st.text(max_size=10), st.just("<|endoftext|>")), max_size=6))
def test_round_trip_property_with_special_tokens(gpt2, parts):
    text = "".join(parts)
    assert gpt2.decode(gpt2.encode(text)) == _spaced_around("<|endoftext|>", text)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=80))
def test_pretokenize_covers_every_character(text):
    assert "".join(pretokenize(text)) == text


def test_trained_vocabulary_merges_frequent_words(gpt2):
    # "Hello" and " world" occur many times in the training corpus: one token each.
    assert gpt2.tokenize("Hello world") == ["Hello", "Ġworld"]
    assert len(gpt2.encode("今天天气")) < len("今天天气".encode("utf-8"))


def test_cache_gives_same_answers_and_stays_bounded(bpe_files):
    tok = GPT2Tokenizer(*bpe_files, cache_size=3)
    first = tok.encode("one two three four five six")
    assert len(tok._cache) <= 3
    assert tok.encode("one two three four five six") == first
    tok.clear_cache()
    assert tok.encode("one two three four five six") == first


def test_pickles_for_data_loader_workers(gpt2):
    copy = pickle.loads(pickle.dumps(gpt2))
    text = "Hello world, 今天 😀"
    assert copy.encode(text) == gpt2.encode(text)
