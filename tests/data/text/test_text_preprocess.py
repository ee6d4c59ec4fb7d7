"""JSON lines → indexed dataset: exact round trips, malformed lines, workers, the CLI."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from textdata_helpers import TinyTokenizer, make_documents, write_jsonl, write_vocab

from libai.data.data_utils.indexed_dataset import MMapIndexedDataset
from libai.data.data_utils.preprocess import MalformedLineError, output_prefix_for, preprocess_jsonl
from libai.data.data_utils.sentence_splitter import split_sentences

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HERE = os.path.dirname(os.path.abspath(__file__))


def _quiet(msg):
    pass


def test_document_level_reads_back_tokenized_input(corpus):
    ds = MMapIndexedDataset(corpus.doc_prefix)
    assert corpus.doc_prefix.endswith("docs_text_document")
    assert ds.num_documents == len(corpus.docs) == len(ds)
    assert ds.dtype == np.uint16
    for d in range(len(corpus.docs)):
        assert list(ds.get_document(d)) == corpus.doc_tokens(d)


def test_sentence_level_reads_back_each_sentence(corpus):
    ds = MMapIndexedDataset(corpus.sent_prefix)
    assert corpus.sent_prefix.endswith("sents_text_sentence")
    assert ds.num_documents == len(corpus.docs)
    for d in range(len(corpus.docs)):
        first, end = ds.doc_idx[d], ds.doc_idx[d + 1]
        assert [list(ds[i]) for i in range(first, end)] == corpus.sentence_tokens(d)


def test_several_json_keys_give_one_dataset_each(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"title": "Stone river.", "text": "Cedar dune. Amber cloud."}) + "\n")
    tok = TinyTokenizer()
    summary = preprocess_jsonl(str(path), str(tmp_path / "out"), tok, json_keys=["title", "text"],
                               split_sentences=True, log=_quiet)
    assert summary.outputs == {
        "title": str(tmp_path / "out_title_sentence"), "text": str(tmp_path / "out_text_sentence")
    }
    text = MMapIndexedDataset(summary.outputs["text"])
    assert [list(text[i]) for i in range(len(text))] == [tok.encode("Cedar dune."), tok.encode("Amber cloud.")]
    assert list(MMapIndexedDataset(summary.outputs["title"])[0]) == tok.encode("Stone river.")


def test_malformed_lines_reported_with_line_numbers_and_skipped(tmp_path):
    good = json.dumps({"text": "River stone."})
    lines = [good, "{not json", json.dumps({"body": "x"}), json.dumps({"text": 5}), "", good, "[1, 2]"]
    path = tmp_path / "in.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'{"text": "\xff"}\n')
    messages = []
    summary = preprocess_jsonl(str(path), str(tmp_path / "out"), TinyTokenizer(), log=messages.append)
    assert [n for n, _ in summary.skipped] == [2, 3, 4, 7, 8]
    reasons = dict(summary.skipped)
    assert "invalid JSON" in reasons[2] and "missing key 'text'" in reasons[3]
    assert "int, expected a string" in reasons[4] and "expected a JSON object" in reasons[7]
    assert "not valid UTF-8" in reasons[8]
    assert summary.documents == 2 and summary.blank_lines == 1
    logged = "\n".join(messages)
    for n in (2, 3, 4, 7, 8):
        assert f"LINE {n} skipped: {path}:{n}:" in logged
    assert "skipped 5 malformed line(s), ignored 1 blank line(s)" in logged
    assert MMapIndexedDataset(summary.outputs["text"]).num_documents == 2


def test_strict_stops_at_first_bad_line_and_leaves_no_output(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": "River."}) + "\n{oops\n")
    with pytest.raises(MalformedLineError, match=r"in.jsonl:2: invalid JSON.*--strict"):
        preprocess_jsonl(str(path), str(tmp_path / "out"), TinyTokenizer(), strict=True, log=_quiet)
    assert not any(name.startswith("out") for name in os.listdir(tmp_path))


def test_progress_line_reports_rates(tmp_path):
    path = write_jsonl(str(tmp_path / "in.jsonl"), make_documents(10, seed=1))
    messages = []
    preprocess_jsonl(path, str(tmp_path / "out"), TinyTokenizer(), log_interval=4, log=messages.append)
    progress = [m for m in messages if m.startswith("processed")]
    assert [m.split()[1] for m in progress] == ["4", "8"]
    assert all("docs/s" in m and "tokens/s" in m and "MB/s" in m for m in progress)


def test_two_workers_give_byte_identical_files(tmp_path):
    path = write_jsonl(str(tmp_path / "in.jsonl"), make_documents(150, seed=5))
    outputs = {}
    for workers in (1, 2):
        summary = preprocess_jsonl(path, str(tmp_path / f"w{workers}"), TinyTokenizer(), split_sentences=True,
                                   append_eod=True, workers=workers, chunk_size=7, log=_quiet)
        prefix = summary.outputs["text"]
        outputs[workers] = [open(prefix + ext, "rb").read() for ext in (".bin", ".idx")]
    assert outputs[1] == outputs[2]


def test_output_prefix_scheme():
    assert output_prefix_for("data/c", "text", False) == "data/c_text_document"
    assert output_prefix_for("data/c", "text", True) == "data/c_text_sentence"


def test_missing_input_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl does not exist"):
        preprocess_jsonl(str(tmp_path / "nope.jsonl"), str(tmp_path / "o"), TinyTokenizer(), log=_quiet)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hello there. General Kenobi!", ["Hello there.", "General Kenobi!"]),
        ("Ask Dr. Jones, e.g. today. Then go.", ["Ask Dr. Jones, e.g. today.", "Then go."]),
        ('He said "Stop." She left?  2 days later.', ['He said "Stop."', "She left?", "2 days later."]),
        ("J. R. Tolkien wrote. First para\n\nSecond para", ["J. R. Tolkien wrote.", "First para", "Second para"]),
        ("第一句。第二句！", ["第一句。", "第二句！"]),
        ("   ", []),
    ],
)
def test_sentence_splitter(text, expected):
    assert split_sentences(text) == expected


# ------------------------------------------------------------------------------- command line
def _run_tool(*args):
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "tools", "preprocess_data.py"), *args],
        capture_output=True, text=True, env=env, timeout=120,
    )


def test_cli_help_explains_options():
    result = _run_tool("--help")
    assert result.returncode == 0
    for option in ("--json-keys", "--split-sentences", "--append-eod", "--workers", "--log-interval",
                   "--dataset-impl", "--tokenizer-name", "--vocab-file", "--merges-file", "--do-lower-case",
                   "--strict"):
        assert option in result.stdout


def test_cli_end_to_end_and_strict_exit_code(tmp_path):
    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": "Cedar dune. Amber cloud."}) + "\n{bad\n")
    common = ["--input", str(path), "--tokenizer-name", "textdata_helpers:TinyTokenizer", "--vocab-file", vocab]
    ok = _run_tool(*common, "--output-prefix", str(tmp_path / "o"), "--split-sentences")
    assert ok.returncode == 0, ok.stderr
    assert "LINE 2 skipped" in ok.stderr and "skipped 1 malformed line(s)" in ok.stderr
    assert len(MMapIndexedDataset(str(tmp_path / "o_text_sentence"))) == 2
    strict = _run_tool(*common, "--output-prefix", str(tmp_path / "s"), "--strict")
    assert strict.returncode == 1
    assert "in.jsonl:2: invalid JSON" in strict.stderr


# ------------------------------------------------------------------------------- LiBai's command line
def _bert_reference(tmp_path, texts):
    """Token ids of each sentence, by a BertTokenizer called directly (no tool involved)."""
    from libai.tokenizer import BertTokenizer

    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    tok = BertTokenizer(vocab_file=vocab, do_lower_case=True)
    docs = [[tok.encode(s, add_special_tokens=False) for s in split_sentences(t)] for t in texts]
    return vocab, docs


LIBAI_TEXTS = ["Cedar dune. Amber cloud!", "River stone, falcon.", "Ember fossil. Granite? Hollow."]


@pytest.mark.parametrize("dataset_impl, writer", [("mmap", "mmidx"), ("lazy", "tntidx"), ("cached", "tntidx")])
def test_libai_command_line_writes_megatron_files(tmp_path, dataset_impl, writer):
    from megatron_layouts import write_megatron_mmidx, write_megatron_tntidx

    vocab, docs = _bert_reference(tmp_path, LIBAI_TEXTS)
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in LIBAI_TEXTS))
    # Every flag of LiBai's tools/preprocess_data.py that applies to a BERT corpus.
    result = _run_tool("--input", str(path), "--json-keys", "text", "--split-sentences",
                       "--tokenizer-name", "BertTokenizer", "--vocab-file", vocab, "--do-lower-case",
                       "--output-prefix", str(tmp_path / "out"), "--dataset-impl", dataset_impl,
                       "--workers", "1", "--log-interval", "100")
    assert result.returncode == 0, result.stderr
    reference = str(tmp_path / "reference")
    if writer == "mmidx":
        write_megatron_mmidx(reference, docs, np.uint16)  # a 70-entry vocabulary fits uint16
    else:
        write_megatron_tntidx(reference, docs, np.int32)  # LiBai's lazy/cached store int32
    for ext in (".idx", ".bin"):
        assert (tmp_path / f"out_text_sentence{ext}").read_bytes() == open(reference + ext, "rb").read()


def test_libai_only_flags_are_accepted(tmp_path):
    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": "Cedar dune.\nAmber cloud.\n\nRiver."}) + "\n")
    result = _run_tool("--input", str(path), "--tokenizer-name", "BertTokenizer", "--vocab-file", vocab,
                       "--split-sentences", "--keep-newlines",
                       "--output-prefix", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    assert len(MMapIndexedDataset(str(tmp_path / "o_text_sentence"))) == 3
    refused = _run_tool("--input", str(path), "--tokenizer-name", "BertTokenizer", "--vocab-file", vocab,
                        "--extra-ids", "10", "--output-prefix", str(tmp_path / "x"))
    assert refused.returncode != 0 and "BertTokenizer takes no --extra-ids; drop it" in refused.stderr
    unknown = _run_tool("--input", str(path), "--tokenizer-name", "NoSuchTokenizer", "--vocab-file", vocab,
                        "--output-prefix", str(tmp_path / "y"))
    assert unknown.returncode != 0 and "unknown --tokenizer-name 'NoSuchTokenizer'; use one of [" in unknown.stderr
    assert "'BertTokenizer'" in unknown.stderr and "'GPT2Tokenizer'" in unknown.stderr


def test_tool_builds_tokenizers_through_the_builder(tmp_path, monkeypatch):
    import importlib.util

    import libai.tokenizer

    spec = importlib.util.spec_from_file_location("preprocess_tool", os.path.join(REPO_ROOT, "tools", "preprocess_data.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    seen = []
    real = libai.tokenizer.build_tokenizer
    monkeypatch.setattr(libai.tokenizer, "build_tokenizer", lambda cfg: seen.append(cfg) or real(cfg))
    vocab = write_vocab(str(tmp_path / "vocab.txt"))
    args = tool.build_parser().parse_args(["--input", "x", "--output-prefix", "y", "--vocab-file", vocab,
                                           "--tokenizer-name", "BertTokenizer"])
    tok = tool.build_tokenizer(args)
    assert isinstance(tok, libai.tokenizer.BertTokenizer) and len(seen) == 1
    assert dict(seen[0]["tokenizer"]) == {"_target_": libai.tokenizer.BertTokenizer, "vocab_file": vocab,
                                          "do_lower_case": False, "do_chinese_wwm": False}
    assert tok.encode("Cedar DUNE", add_special_tokens=False)[1] == tok.convert_tokens_to_ids("[UNK]")
    wwm = tool.build_parser().parse_args(["--input", "x", "--output-prefix", "y", "--vocab-file", vocab,
                                          "--do-chinese-wwm", "--merges-file", "m.txt"])
    with pytest.raises(SystemExit, match="BertTokenizer takes no --merges-file; drop it"):
        tool.tokenizer_arguments(libai.tokenizer.BertTokenizer, wwm)
    wwm.merges_file = None
    assert tool.tokenizer_arguments(libai.tokenizer.BertTokenizer, wwm)["do_chinese_wwm"] is True


@pytest.mark.parametrize(
    "text",
    ["Cedar dune.\nAmber cloud!\n\n  River stone.  \n", "One line.  Two\nlines here.\n\n\nLast", "  \n"],
)
def test_keep_newlines_keeps_what_follows_each_sentence(text):
    kept = split_sentences(text, keep_newlines=True)
    assert "".join(kept) == text.lstrip()
    assert [" ".join(s.split()) for s in kept] == [" ".join(s.split()) for s in split_sentences(text)]


def test_keep_newlines_exact_pieces():
    assert split_sentences("One line.  Two\nlines here.\n\n\nLast", keep_newlines=True) == [
        "One line.  ", "Two\nlines here.\n\n\n", "Last"]
