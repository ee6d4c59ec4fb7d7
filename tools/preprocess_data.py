#!/usr/bin/env python
"""Tokenize a JSON-lines corpus into memory-mapped indexed datasets for GPT/BERT/T5 training.

Example (GPT, one document per line, end-of-document token appended):

    python tools/preprocess_data.py --input corpus.jsonl --output-prefix data/corpus \\
        --tokenizer-name GPT2Tokenizer --vocab-file vocab.json --merges-file merges.txt \\
        --append-eod --workers 2

writes ``data/corpus_text_document.bin`` and ``.idx``; give ``data/corpus_text_document`` to
the dataset as ``data_prefix``. See docs/prepare_text_data.md.
"""
import argparse
import importlib
import os
import sys
from typing import Any, List, Optional

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

import libai  # noqa: E402,F401  (before anything that imports oneflow)
from libai.data.data_utils.preprocess import MalformedLineError, preprocess_jsonl  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=(
            "Output: {output-prefix}_{key}_{document|sentence}.bin/.idx per JSON key. "
            "Malformed lines (bad JSON, missing key, non-string value, bad UTF-8) are reported "
            "with their line number and skipped, or stop the run with --strict."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    io = parser.add_argument_group("input/output")
    io.add_argument("--input", required=True, help="JSON-lines file: one JSON object (document) per line")
    io.add_argument("--json-keys", nargs="+", default=["text"],
                    help="keys whose string values are tokenized; each key gives its own dataset")
    io.add_argument("--output-prefix", required=True, help="path prefix of the output files")
    io.add_argument("--dataset-impl", default="mmap", choices=["mmap"],
                    help="on-disk format (memory-mapped, lazily read)")
    text = parser.add_argument_group("text")
    text.add_argument("--split-sentences", action="store_true",
                      help="store one item per sentence (needed by BERT/T5 sentence-pair sampling)")
    text.add_argument("--append-eod", action="store_true",
                      help="append the tokenizer's end-of-document id to every document (GPT)")
    tok = parser.add_argument_group("tokenizer")
    tok.add_argument("--tokenizer-name", default="BertTokenizer",
                     help="BertTokenizer, GPT2Tokenizer, or module:Class of your own tokenizer")
    tok.add_argument("--vocab-file", default=None, help="vocabulary file of the tokenizer")
    tok.add_argument("--merges-file", default=None, help="BPE merges file (GPT2Tokenizer)")
    tok.add_argument("--do-lower-case", action="store_true", help="lower-case text before tokenizing (BERT)")
    run = parser.add_argument_group("run")
    run.add_argument("--workers", type=int, default=1, help="tokenizer processes")
    run.add_argument("--chunk-size", type=int, default=64, help="lines handed to a worker at a time")
    run.add_argument("--log-interval", type=int, default=1000,
                     help="print docs/s, tokens/s and MB/s every this many documents (0: never)")
    run.add_argument("--strict", action="store_true", help="stop at the first malformed line")
    return parser


def build_tokenizer(args: argparse.Namespace) -> Any:
    """The tokenizer named on the command line, built from its vocabulary files."""
    name = args.tokenizer_name
    if args.vocab_file is None:
        raise SystemExit(f"--vocab-file is required for {name}")
    if ":" in name:
        module_name, class_name = name.split(":", 1)
        cls = getattr(importlib.import_module(module_name), class_name)
        return cls(vocab_file=args.vocab_file)
    import libai.tokenizer as tokenizers

    if name == "BertTokenizer":
        return tokenizers.BertTokenizer(vocab_file=args.vocab_file, do_lower_case=args.do_lower_case)
    if name == "GPT2Tokenizer":
        if args.merges_file is None:
            raise SystemExit("GPT2Tokenizer needs --merges-file as well as --vocab-file")
        return tokenizers.GPT2Tokenizer(vocab_file=args.vocab_file, merges_file=args.merges_file)
    raise SystemExit(f"unknown --tokenizer-name {name!r}; use BertTokenizer, GPT2Tokenizer or module:Class")


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    tokenizer = build_tokenizer(args)
    try:
        summary = preprocess_jsonl(
            args.input, args.output_prefix, tokenizer, json_keys=args.json_keys,
            split_sentences=args.split_sentences, append_eod=args.append_eod, workers=args.workers,
            chunk_size=args.chunk_size, log_interval=args.log_interval, strict=args.strict,
        )
    except (MalformedLineError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for key, prefix in summary.outputs.items():
        print(f"{key}: {prefix}.bin / {prefix}.idx")
    return 0


if __name__ == "__main__":
    sys.exit(main())
