"""Write a small real English corpus as JSON lines: the Python documentation's help topics.

Every CPython installation ships the text of the language reference's help topics in the
standard library (``pydoc_data.topics``, about 460,000 characters in 3.10), so this corpus needs
no download. Each paragraph of at least ``--min-chars`` characters becomes one document
``{"text": ...}``; paragraphs keep their order, so the corpus' document split (train / valid /
test by document ratios) holds out whole later sections.

    python projects/gpt2_tiny_pretrain/make_corpus.py --output data/pydoc/corpus.jsonl
"""
import argparse
import json
import os
import re
from typing import Callable, Iterable, Iterator, List, Optional


def paragraphs(min_chars: int) -> Iterator[str]:
    from pydoc_data.topics import topics

    for name in sorted(topics):
        for block in re.split(r"\n\s*\n", topics[name]):
            text = " ".join(line.strip() for line in block.splitlines() if line.strip())
            if len(text) >= min_chars:
                yield text


def corpus_main(description: str, documents: Callable[[int], Iterable[str]], min_chars: int,
                min_chars_help: str, argv: Optional[List[str]] = None) -> None:
    """The command line of a corpus script: ``--output FILE --min-chars N`` writes
    ``documents(N)`` to FILE as JSON lines ``{"text": ...}`` and says how much it wrote.
    Shared with projects/llama_lora/make_docstrings.py."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--output", required=True, help="the JSON-lines file to write")
    parser.add_argument("--min-chars", type=int, default=min_chars, help=min_chars_help)
    args = parser.parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    count = chars = 0
    with open(args.output, "w") as f:
        for text in documents(args.min_chars):
            f.write(json.dumps({"text": text}) + "\n")
            count, chars = count + 1, chars + len(text)
    print(f"wrote {count} documents ({chars} characters) to {args.output}")


def main(argv: Optional[List[str]] = None) -> None:
    corpus_main(__doc__.split("\n\n")[0], paragraphs, 40,
                "drop paragraphs shorter than this (headings, lone code lines)", argv)


if __name__ == "__main__":
    main()
