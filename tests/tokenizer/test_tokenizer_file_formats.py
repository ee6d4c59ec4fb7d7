"""The files tokenizers write, compared byte for byte with hand-made references in fixtures/
(not only written and read back by our own code), and read from those references."""
import filecmp
import os

import pytest

from libai.tokenizer import BertTokenizer, GPT2Tokenizer, RobertaTokenizer

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def fixture(*parts):
    return os.path.join(FIXTURES, *parts)


def _same_bytes(written, reference):
    with open(written, "rb") as a, open(reference, "rb") as b:
        assert a.read() == b.read(), f"{written} differs from {reference}"


def test_vocab_txt_reads_line_numbers_and_writes_the_same_bytes(tmp_path):
    tok = BertTokenizer(fixture("bert", "vocab.txt"))
    assert tok.convert_tokens_to_ids(["[PAD]", "hello", "##s", "今"]) == [0, 5, 7, 9]
    (path,) = tok.save_vocabulary(str(tmp_path))
    assert os.path.basename(path) == "vocab.txt"
    _same_bytes(path, fixture("bert", "vocab.txt"))
    (prefixed,) = tok.save_vocabulary(str(tmp_path), filename_prefix="mine")
    assert os.path.basename(prefixed) == "mine-vocab.txt"


def test_vocab_json_and_merges_txt_read_and_write_the_same_bytes(tmp_path):
    tok = GPT2Tokenizer(fixture("bpe", "vocab.json"), fixture("bpe", "merges.txt"))
    assert tok.tokenize("hello world!") == ["hello", "Ġworld", "!"]
    assert tok.encode("hello world!") == [15, 20, 21]
    vocab_json, merges_txt = tok.save_vocabulary(str(tmp_path))
    # vocab.json: one "token": id per line in id order, non-ASCII as itself ("Ġ", "é").
    _same_bytes(vocab_json, fixture("bpe", "vocab.json"))
    # merges.txt: the "#version: 0.2" header, then one "left right" pair per line.
    _same_bytes(merges_txt, fixture("bpe", "merges.txt"))


def test_save_pretrained_writes_the_reference_directory(tmp_path):
    tok = BertTokenizer(fixture("bert", "vocab.txt"), do_lower_case=False,
                        additional_special_tokens=["<x>"])
    assert tok.add_tokens(["newword"]) == 1
    written = tok.save_pretrained(str(tmp_path))
    names = sorted(os.path.basename(p) for p in written)
    assert names == ["added_tokens.json", "special_tokens_map.json", "tokenizer_config.json",
                     "vocab.txt"]
    match, mismatch, errors = filecmp.cmpfiles(str(tmp_path), fixture("bert_saved"), names,
                                               shallow=False)
    assert (mismatch, errors) == ([], [])


def test_from_pretrained_reads_the_reference_directory():
    tok = BertTokenizer.from_pretrained(fixture("bert_saved"))
    assert tok.do_lower_case is False
    assert tok.additional_special_tokens == ["<x>"]
    assert tok.get_added_vocab() == {"<x>": 10, "newword": 11}
    assert tok.tokenize("Hello newword<x>hello!") == ["[UNK]", "newword", "<x>", "hello", "!"]
    assert tok.encode("hello newword", add_special_tokens=True) == [2, 5, 11, 3]
    assert tok.decode([5, 10, 6], skip_special_tokens=True) == "hello world"


def test_from_pretrained_accepts_a_single_vocab_file_and_overrides():
    tok = BertTokenizer.from_pretrained(fixture("bert", "vocab.txt"), do_lower_case=False)
    assert tok.tokenize("Hello hello") == ["[UNK]", "hello"]
    with pytest.raises(ValueError, match="needs 2 files \\(vocab.json, merges.txt\\); pass the directory"):
        RobertaTokenizer.from_pretrained(fixture("bpe", "vocab.json"))


def test_a_published_name_says_where_to_fetch_it():
    with pytest.raises(FileNotFoundError) as info:
        RobertaTokenizer.from_pretrained("roberta-base")
    message = str(info.value)
    assert "libai never downloads" in message
    assert "https://huggingface.co/roberta-base/resolve/main/vocab.json" in message
    assert "https://huggingface.co/roberta-base/resolve/main/merges.txt" in message
    with pytest.raises(FileNotFoundError, match="no tokenizer directory or file at 'nowhere/x'"):
        BertTokenizer.from_pretrained("nowhere/x")


def test_added_ids_with_a_gap_are_refused(tmp_path):
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        (tmp_path / name).write_bytes(open(fixture("bert_saved", name), "rb").read())
    (tmp_path / "added_tokens.json").write_text('{"<x>": 10, "newword": 12}', encoding="utf-8")
    with pytest.raises(ValueError, match="gives 'newword' the id 12, but the next free id is 11"):
        BertTokenizer.from_pretrained(str(tmp_path))


def test_arguments_json_cannot_hold_are_left_out_with_a_warning(tmp_path, caplog):
    def one_by_one(run):
        return list(run)

    tok = BertTokenizer(fixture("bert", "vocab.txt"), do_chinese_wwm=True,
                        chinese_word_segmenter=one_by_one)
    with caplog.at_level("WARNING", logger="libai.tokenizer.pretrained"):
        tok.save_pretrained(str(tmp_path))
    assert (tmp_path / "tokenizer_config.json").read_text() == '{"do_chinese_wwm": true}'
    assert "chinese_word_segmenter=" in caplog.text and "pass it to from_pretrained() again" in caplog.text
    again = BertTokenizer.from_pretrained(str(tmp_path), chinese_word_segmenter=one_by_one)
    assert again.do_chinese_wwm and again.tokenize("今今") == ["今", "今"]
