#!/usr/bin/env python
"""Train a small vocabulary from a text corpus, so that no one is stuck without one.

    python tools/train_vocab.py --input corpus.txt --type bpe --vocab-size 8000 --output-dir vocab/
    python tools/train_vocab.py --input docs.jsonl --json-key text --type wordpiece \\
        --vocab-size 8000 --output-dir vocab/

``--type bpe`` writes ``vocab.json`` + ``merges.txt`` (for ``GPT2Tokenizer``); ``--type wordpiece``
writes ``vocab.txt`` (for ``BertTokenizer``). The work is done by
:func:`libai.tokenizer.train_vocab`; see docs/tokenizers.md.
"""
import argparse
import os
import sys
import time
from typing import List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from libai.tokenizer.trainers import train_vocab  # noqa: E402
from libai.tokenizer.vocab_files import load_bpe_vocab, load_wordpiece_vocab  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface (kept separate so tests can inspect it)."""
    parser = argparse.ArgumentParser(
        description="Train a byte-level BPE (vocab.json + merges.txt) or WordPiece (vocab.txt) "
        "vocabulary from a plain-text or JSON-lines corpus.",
    )
    parser.add_argument("--input", required=True,
                        help="corpus file: one text per line, or JSON lines")
    parser.add_argument("--json-key", default=None,
                        help="read JSON lines and take the text from this key (e.g. 'text')")
    parser.add_argument("--type", choices=("bpe", "wordpiece"), default="bpe", dest="kind",
                        help="bpe: for GPT2Tokenizer; wordpiece: for BertTokenizer (default: bpe)")
    parser.add_argument("--vocab-size", type=int, default=8000,
                        help="target number of tokens, special tokens included (default: 8000)")
    parser.add_argument("--min-frequency", type=int, default=2,
                        help="never merge a pair seen fewer times than this (default: 2)")
    parser.add_argument("--cased", action="store_true",
                        help="wordpiece only: keep case and accents (then use BertTokenizer(..., "
                        "do_lower_case=False))")
    parser.add_argument("--output-dir", required=True, help="directory to write the files into")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    start = time.time()
    try:
        paths = train_vocab(
            args.input,
            args.output_dir,
            kind=args.kind,
            vocab_size=args.vocab_size,
            json_key=args.json_key,
            min_frequency=args.min_frequency,
            do_lower_case=not args.cased,
        )
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    size = len(load_bpe_vocab(paths[0]) if args.kind == "bpe" else load_wordpiece_vocab(paths[0]))
    print(f"trained a {args.kind} vocabulary of {size} tokens in {time.time() - start:.1f}s:")
    if size < args.vocab_size:
        print(f"  (fewer than --vocab-size {args.vocab_size}: the corpus has no more pairs seen "
              f"--min-frequency {args.min_frequency} times)")
    for path in paths:
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
