#!/usr/bin/env python
"""Tokenize a JSON-lines corpus into memory-mapped indexed datasets for GPT/BERT/T5 training.

Example (GPT, one document per line, end-of-document token appended):

    python tools/preprocess_data.py --input corpus.jsonl --output-prefix data/corpus \\
        --tokenizer-name GPT2Tokenizer --vocab-file vocab.json --merges-file merges.txt \\
        --append-eod --workers 2

writes ``data/corpus_text_document.bin`` and ``.idx``; give ``data/corpus_text_document`` to
the dataset as ``data_prefix``. The files are Megatron-LM's / LiBai's ``MMIDIDX`` format, so
their tools read them too. LiBai's command lines of this tool work unchanged. See
docs/prepare_text_data.md.
"""
import argparse
import importlib
import inspect
import os
import sys
from typing import Any, Dict, List, Optional

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
    io.add_argument("--dataset-impl", default="mmap", choices=["mmap", "lazy", "cached", "libai"],
                    help="index layout: mmap = MMIDIDX (Megatron-LM/LiBai, read lazily); lazy/cached = "
                    "their older TNTIDX (int32 tokens); libai = libai's first layout LBTXTIDX")
    text = parser.add_argument_group("text")
    text.add_argument("--split-sentences", action="store_true",
                      help="store one item per sentence (needed by BERT/T5 sentence-pair sampling)")
    text.add_argument("--keep-newlines", action="store_true",
                      help="with --split-sentences, each sentence keeps the line breaks that follow it")
    text.add_argument("--append-eod", action="store_true",
                      help="append the tokenizer's end-of-document id to every document (GPT)")
    tok = parser.add_argument_group("tokenizer")
    tok.add_argument("--tokenizer-name", default="BertTokenizer",
                     help="a class of libai.tokenizer (BertTokenizer, GPT2Tokenizer, T5Tokenizer, "
                     "RobertaTokenizer, ...), or module:Class of your own tokenizer")
    tok.add_argument("--vocab-file", default=None, help="vocabulary file of the tokenizer")
    tok.add_argument("--merges-file", default=None, help="BPE merges file (GPT2Tokenizer, RobertaTokenizer)")
    tok.add_argument("--do-lower-case", action="store_true", help="lower-case text before tokenizing (BERT)")
    tok.add_argument("--do-chinese-wwm", action="store_true",
                     help="mark Chinese whole words for whole-word masking (BertTokenizer)")
    tok.add_argument("--extra-ids", type=int, default=None,
                     help="number of <extra_id_N> sentinel tokens (T5Tokenizer; default: its own)")
    run = parser.add_argument_group("run")
    run.add_argument("--workers", type=int, default=1, help="tokenizer processes")
    run.add_argument("--chunk-size", type=int, default=64, help="lines handed to a worker at a time")
    run.add_argument("--log-interval", type=int, default=1000,
                     help="print docs/s, tokens/s and MB/s every this many documents (0: never)")
    run.add_argument("--strict", action="store_true", help="stop at the first malformed line")
    return parser


def _tokenizer_class(name: str) -> Any:
    if ":" in name:
        module_name, class_name = name.split(":", 1)
        return getattr(importlib.import_module(module_name), class_name)
    import libai.tokenizer as tokenizers

    cls = getattr(tokenizers, name, None)
    if not inspect.isclass(cls) or not issubclass(cls, tokenizers.BaseTokenizer):
        known = sorted(n for n in dir(tokenizers) if n.endswith("Tokenizer") and n != "BaseTokenizer"
                       and inspect.isclass(getattr(tokenizers, n)))
        raise SystemExit(f"unknown --tokenizer-name {name!r}; use one of {known} or module:Class")
    return cls


def tokenizer_arguments(cls: Any, args: argparse.Namespace) -> Dict[str, Any]:
    """The constructor arguments the command line gives ``cls``: each option goes to the
    parameter of that name when the class has one. An option set on the command line that the
    class cannot take is an error rather than silently dropped."""
    params = inspect.signature(cls.__init__).parameters
    options = {
        "vocab_file": (args.vocab_file, "--vocab-file"),
        "merges_file": (args.merges_file, "--merges-file"),
        "do_lower_case": (args.do_lower_case, "--do-lower-case"),
        "do_chinese_wwm": (args.do_chinese_wwm, "--do-chinese-wwm"),
        "extra_ids": (args.extra_ids, "--extra-ids"),
    }
    kwargs: Dict[str, Any] = {}
    for key, (value, flag) in options.items():
        given = value not in (None, False)
        if key in params:
            if value is not None:
                kwargs[key] = value
            elif params[key].default is inspect.Parameter.empty:
                raise SystemExit(f"{cls.__name__} needs {flag}")
        elif given:
            raise SystemExit(f"{cls.__name__} takes no {flag}; drop it")
    return kwargs


def build_tokenizer(args: argparse.Namespace) -> Any:
    """The tokenizer named on the command line, built by libai.tokenizer's builder.

    A ``module:Class`` tokenizer that is not a libai ``BaseTokenizer`` (anything with
    ``encode(text, add_special_tokens=False)``) is called directly: the builder only builds
    libai tokenizers.
    """
    from libai.config import LazyCall
    from libai.tokenizer import BaseTokenizer
    from libai.tokenizer import build_tokenizer as build_from_config

    cls = _tokenizer_class(args.tokenizer_name)
    kwargs = tokenizer_arguments(cls, args)
    if not (inspect.isclass(cls) and issubclass(cls, BaseTokenizer)):
        return cls(**kwargs)
    return build_from_config({"tokenizer": LazyCall(cls)(**kwargs)})


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    tokenizer = build_tokenizer(args)
    try:
        summary = preprocess_jsonl(
            args.input, args.output_prefix, tokenizer, json_keys=args.json_keys,
            split_sentences=args.split_sentences, append_eod=args.append_eod, workers=args.workers,
            chunk_size=args.chunk_size, log_interval=args.log_interval, strict=args.strict,
            dataset_impl=args.dataset_impl, keep_newlines=args.keep_newlines,
        )
    except (MalformedLineError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for key, prefix in summary.outputs.items():
        print(f"{key}: {prefix}.bin / {prefix}.idx")
    return 0


if __name__ == "__main__":
    sys.exit(main())
