"""Vocabulary files: what a missing or malformed file says."""
import json

import pytest

from libai.tokenizer import BertTokenizer, GPT2Tokenizer
from libai.tokenizer.vocab_files import load_merges, save_merges, save_wordpiece_vocab


def test_missing_bert_vocab_names_the_path_and_the_tool(tmp_path):
    missing = str(tmp_path / "nowhere" / "vocab.txt")
    with pytest.raises(FileNotFoundError) as info:
        BertTokenizer(missing)
    message = str(info.value)
    assert missing in message
    assert "tools/train_vocab.py --type wordpiece" in message


def test_missing_gpt2_files_name_the_path_and_the_tool(tmp_path, bpe_files):
    vocab_json, merges_txt = bpe_files
    with pytest.raises(FileNotFoundError, match="tools/train_vocab.py --type bpe") as info:
        GPT2Tokenizer(str(tmp_path / "vocab.json"), merges_txt)
    assert str(tmp_path / "vocab.json") in str(info.value)
    with pytest.raises(FileNotFoundError, match="merges.txt.*not found"):
        GPT2Tokenizer(vocab_json, str(tmp_path / "merges.txt"))


def test_a_directory_is_not_a_vocab_file(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory; pass the path of the file"):
        BertTokenizer(str(tmp_path))


def test_bert_rejects_a_bpe_vocab(bpe_files):
    with pytest.raises(ValueError, match="looks like a BPE vocab.json.*GPT2Tokenizer"):
        BertTokenizer(bpe_files[0])


@pytest.mark.parametrize("content, message", [
    ("[UNK]\nhello\nworld\nhello\n", "vocab.txt:4: token 'hello' already appeared on line 2"),
    ("", "is empty"),
])
def test_malformed_vocab_txt(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        BertTokenizer(str(path))


@pytest.mark.parametrize("content, message", [
    ("not json", "is not valid JSON"),
    ("[1, 2]", "non-empty JSON object"),
    ('{"a": 0, "b": "1"}', "ids must be integers, but 'b' maps to '1'"),
    ('{"a": 0, "b": 2}', "ids must be exactly 0..1 with no gaps or repeats"),
    ('{"a": 0, "b": 0}', "ids must be exactly 0..1"),
])
def test_malformed_vocab_json(tmp_path, bpe_files, content, message):
    path = tmp_path / "vocab.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        GPT2Tokenizer(str(path), bpe_files[1])


def test_malformed_merges_line(tmp_path):
    path = tmp_path / "merges.txt"
    path.write_text("#version: 0.2\na b\nabc\n", encoding="utf-8")
    with pytest.raises(ValueError, match="merges.txt:3: expected two space-separated symbols"):
        load_merges(str(path))


def test_merges_round_trip_and_header(tmp_path):
    path = save_merges([("a", "b"), ("Ġ", "ab")], str(tmp_path))
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "#version: 0.2\na b\nĠ ab\n"
    assert load_merges(path) == [("a", "b"), ("Ġ", "ab")]


def test_saved_vocab_txt_is_in_id_order(tmp_path):
    path = save_wordpiece_vocab({"b": 1, "a": 0, "##c": 2}, str(tmp_path))
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "a\nb\n##c\n"
    with pytest.raises(ValueError, match="contains a line break"):
        save_wordpiece_vocab({"a\nb": 0}, str(tmp_path))


def test_saved_vocab_json_is_readable_json(gpt2, tmp_path):
    vocab_json, _ = gpt2.save_vocabulary(str(tmp_path))
    with open(vocab_json, encoding="utf-8") as handle:
        data = json.load(handle)
    assert data == gpt2.encoder and list(data.values()) == sorted(data.values())
