"""Vocabulary training: hand-checked merges, determinism, and tokenizers built on the result."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from libai.tokenizer import (
    BasicTokenizer,
    BertTokenizer,
    GPT2Tokenizer,
    train_bpe,
    train_vocab,
    train_wordpiece,
)

from tokenizer_samples import CORPUS, write_lines

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "train_vocab.py")


def test_bpe_merges_worked_out_by_hand():
    # Pre-tokens: "ab", " ab", " ab", "abc" -> (a b) (Ġ a b)x2 (a b c).
    # Pair counts: (a,b)=4, (Ġ,a)=2, (b,c)=1 -> merge a+b. Then (Ġ,ab)=2, (ab,c)=1 -> merge
    # Ġ+ab. (ab,c) is seen once, below min_frequency=2, so training stops.
    vocab, merges = train_bpe(["ab ab ab", "abc"], vocab_size=300)
    assert merges == [("a", "b"), ("Ġ", "ab")]
    assert len(vocab) == 259
    assert (vocab["ab"], vocab["Ġab"], vocab["<|endoftext|>"]) == (256, 257, 258)
    assert all(vocab[chr(b)] == b for b in range(ord("!"), ord("~") + 1))
    _, more = train_bpe(["ab ab ab", "abc"], vocab_size=300, min_frequency=1)
    assert more == [("a", "b"), ("Ġ", "ab"), ("ab", "c")]


def test_bpe_stops_at_vocab_size_and_breaks_ties_by_sorting():
    # All pairs occur once; ties go to the smallest pair: ("a","b") < ("x","y") < ("Ġ","a").
    _, merges = train_bpe(["xy ab"], vocab_size=256 + 1 + 3, min_frequency=1)
    assert merges == [("a", "b"), ("x", "y"), ("Ġ", "ab")]
    vocab, merges = train_bpe(["xy ab"], vocab_size=256 + 1 + 1, min_frequency=1)
    assert merges == [("a", "b")] and len(vocab) == 258


def test_bpe_does_not_learn_across_special_tokens():
    vocab, merges = train_bpe(["ab<|endoftext|>ab"], vocab_size=300)
    assert merges == [("a", "b")]
    assert not any("<" in token and len(token) > 1 and token != "<|endoftext|>" for token in vocab)


def test_bpe_vocab_size_too_small():
    with pytest.raises(ValueError, match="need at least 257"):
        train_bpe(["text"], vocab_size=100)


def test_wordpiece_worked_out_by_hand():
    # Words: low x3, lower x1 -> (l ##o ##w) x3, (l ##o ##w ##e ##r) x1.
    # Alphabet by frequency: ##o ##w l (4 each, sorted), ##e ##r (1 each).
    # (##o,##w)=4 and (l,##o)=4 tie; "##o" sorts first -> ##ow; then (l,##ow)=4 -> low.
    vocab = train_wordpiece(["low low low lower"], vocab_size=50)
    tokens = sorted(vocab, key=vocab.get)
    assert tokens == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                      "##o", "##w", "l", "##e", "##r", "##ow", "low"]


def test_wordpiece_trained_vocab_drives_bert_tokenizer(tmp_path):
    vocab = train_wordpiece(["low low low lower"], vocab_size=50)
    path = write_lines(tmp_path / "vocab.txt", sorted(vocab, key=vocab.get))
    tok = BertTokenizer(path)
    # "lowlow": no "##l" piece exists (l only starts words), so the word is unknown.
    assert tok.tokenize("Lower lowlow") == ["low", "##e", "##r", "[UNK]"]
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)


def test_wordpiece_keeps_the_most_frequent_characters_when_short_of_room():
    vocab = train_wordpiece(["low low low lower"], vocab_size=7)
    assert sorted(vocab, key=vocab.get)[5:] == ["##o", "##w"]
    with pytest.raises(ValueError, match="leaves no room beside 5 special tokens"):
        train_wordpiece(["low"], vocab_size=5)


def test_training_is_deterministic(tmp_path):
    corpus = write_lines(tmp_path / "corpus.txt", CORPUS * 2)
    contents = []
    for run in ("first", "second"):
        paths = train_vocab(corpus, str(tmp_path / run), kind="bpe", vocab_size=350)
        contents.append([open(p, encoding="utf-8").read() for p in paths])
    assert contents[0] == contents[1]


def test_trained_bpe_round_trips_and_compresses(tmp_path):
    corpus = write_lines(tmp_path / "corpus.txt", CORPUS * 3)
    vocab_json, merges_txt = train_vocab(corpus, str(tmp_path / "out"), kind="bpe", vocab_size=350)
    tok = GPT2Tokenizer(vocab_json, merges_txt)
    assert len(tok) == 350
    for text in CORPUS + ["unseen words: zyxwv ÆØÅ ☃"]:
        ids = tok.encode(text)
        assert tok.decode(ids) == text
    # Merges learned from a text make that text shorter than its bytes.
    assert len(tok.encode(CORPUS[0])) < len(CORPUS[0].encode("utf-8"))


def test_trained_wordpiece_round_trips_normalised_text(tmp_path):
    corpus = write_lines(tmp_path / "corpus.txt", CORPUS * 3)
    (vocab_txt,) = train_vocab(corpus, str(tmp_path / "out"), kind="wordpiece", vocab_size=400)
    tok = BertTokenizer(vocab_txt)
    basic = BasicTokenizer()
    for text in CORPUS[:4]:
        ids = tok.encode(text)
        assert tok.unk_id not in ids
        words = " ".join(basic.tokenize(text))
        assert tok.decode(ids, skip_special_tokens=True).replace(" ", "") == words.replace(" ", "")


def test_json_lines_corpus(tmp_path):
    lines = [json.dumps({"text": t, "id": i}) for i, t in enumerate(CORPUS * 2)]
    corpus = write_lines(tmp_path / "corpus.jsonl", lines)
    from_json = train_vocab(corpus, str(tmp_path / "json"), kind="bpe", vocab_size=300,
                            json_key="text")
    plain = write_lines(tmp_path / "corpus.txt", CORPUS * 2)
    from_text = train_vocab(plain, str(tmp_path / "text"), kind="bpe", vocab_size=300)
    for a, b in zip(from_json, from_text):
        assert open(a, encoding="utf-8").read() == open(b, encoding="utf-8").read()


def test_corpus_errors(tmp_path):
    bad = write_lines(tmp_path / "corpus.jsonl", ['{"text": "ok"}', '{"body": "no text key"}'])
    with pytest.raises(ValueError, match="corpus.jsonl:2: no key 'text' in this JSON line"):
        train_vocab(bad, str(tmp_path / "out"), json_key="text")
    broken = write_lines(tmp_path / "broken.jsonl", ["{not json"])
    with pytest.raises(ValueError, match="broken.jsonl:1: not valid JSON"):
        train_vocab(broken, str(tmp_path / "out"), json_key="text")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café\n".encode("latin-1"))
    with pytest.raises(ValueError, match="latin1.txt: line 1 is not UTF-8"):
        train_vocab(str(latin1), str(tmp_path / "out"))
    with pytest.raises(FileNotFoundError, match="corpus file not found"):
        train_vocab(str(tmp_path / "missing.txt"), str(tmp_path / "out"))
    with pytest.raises(ValueError, match="kind must be 'bpe' or 'wordpiece'"):
        train_vocab(bad, str(tmp_path / "out"), kind="unigram")


def _load_tool():
    spec = importlib.util.spec_from_file_location("train_vocab_tool", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_help_runs_as_a_script():
    result = subprocess.run([sys.executable, TOOL, "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0
    for flag in ("--input", "--json-key", "--vocab-size", "--type", "--output-dir"):
        assert flag in result.stdout


def test_cli_trains_both_kinds(tmp_path, capsys):
    tool = _load_tool()
    corpus = write_lines(tmp_path / "corpus.jsonl", [json.dumps({"t": t}) for t in CORPUS * 3])
    out = str(tmp_path / "bpe")
    assert tool.main(["--input", corpus, "--json-key", "t", "--type", "bpe",
                      "--vocab-size", "300", "--output-dir", out]) == 0
    assert "trained a bpe vocabulary of 300 tokens" in capsys.readouterr().out
    tok = GPT2Tokenizer(os.path.join(out, "vocab.json"), os.path.join(out, "merges.txt"))
    assert tok.decode(tok.encode(CORPUS[3])) == CORPUS[3]
    out = str(tmp_path / "wp")
    assert tool.main(["--input", corpus, "--json-key", "t", "--type", "wordpiece",
                      "--vocab-size", "5000", "--output-dir", out]) == 0
    printed = capsys.readouterr().out
    assert "fewer than --vocab-size 5000" in printed
    assert BertTokenizer(os.path.join(out, "vocab.txt")).tokenize("Hello") == ["hello"]


def test_cli_reports_errors_without_a_traceback(tmp_path, capsys):
    tool = _load_tool()
    code = tool.main(["--input", str(tmp_path / "none.txt"), "--output-dir", str(tmp_path)])
    assert code == 2
    assert "error: corpus file not found" in capsys.readouterr().err
