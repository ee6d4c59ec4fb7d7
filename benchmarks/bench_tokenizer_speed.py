"""GPT-2 byte-level BPE in preprocessing: libai's Python BPE against the ``tokenizers`` backend.

    python benchmarks/bench_tokenizer_speed.py            # ~2 MB corpus, 3 alternating rounds
    python benchmarks/bench_tokenizer_speed.py --mb 8 --rounds 5

Both paths run ``preprocess_jsonl`` (the logic of tools/preprocess_data.py, one worker,
``--append-eod``) with the same ``GPT2Tokenizer`` over Python's own documentation
(``pydoc_data.topics``, repeated to ``--mb``), once with ``use_fast_backend=False`` and once
with the backend, in alternating rounds. It prints tokens/s of each, their ratio per round and
whether the written ``.bin``/``.idx`` files are byte-identical (same ids).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import libai  # noqa: E402,F401  (before oneflow)
from bench_text_data import make_corpus  # noqa: E402
from libai.data.data_utils.preprocess import preprocess_jsonl  # noqa: E402
from libai.tokenizer import GPT2Tokenizer, train_vocab  # noqa: E402


def _run(corpus: str, prefix: str, tokenizer: GPT2Tokenizer, fast: bool) -> float:
    tokenizer.use_fast_backend = fast
    tokenizer.clear_cache()  # the Python path must not reuse the previous round's BPE results
    start = time.perf_counter()
    summary = preprocess_jsonl(corpus, prefix, tokenizer, append_eod=True, workers=1,
                               log_interval=0, log=lambda msg: None)
    return summary.tokens / (time.perf_counter() - start)


def _same_files(a: str, b: str) -> bool:
    return all(open(a + ext, "rb").read() == open(b + ext, "rb").read() for ext in (".bin", ".idx"))


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=2.0, help="corpus size in megabytes")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus.jsonl")
        size = make_corpus(corpus, args.mb)
        base = os.path.join(work, "vocab_base.jsonl")
        make_corpus(base, 0.0)
        vocab, merges = train_vocab(base, os.path.join(work, "bpe"), kind="bpe",
                                    vocab_size=args.vocab_size, json_key="text")
        tokenizer = GPT2Tokenizer(vocab_file=vocab, merges_file=merges)
        print(f"corpus: {size / 1e6:.1f} MB of Python documentation, BPE vocabulary {len(tokenizer)}")
        python_rates, fast_rates = [], []
        for i in range(args.rounds):
            python_rates.append(_run(corpus, os.path.join(work, "python"), tokenizer, fast=False))
            fast_rates.append(_run(corpus, os.path.join(work, "fast"), tokenizer, fast=True))
            print(f"round {i + 1}: python {python_rates[-1]:,.0f} tokens/s, tokenizers "
                  f"{fast_rates[-1]:,.0f} tokens/s, ratio {fast_rates[-1] / python_rates[-1]:.2f}")
        same = _same_files(os.path.join(work, "python_text_document"),
                           os.path.join(work, "fast_text_document"))
        ratios = [f / p for f, p in zip(fast_rates, python_rates)]
        print(f"python BPE: mean {statistics.mean(python_rates):,.0f} tokens/s")
        print(f"tokenizers backend: mean {statistics.mean(fast_rates):,.0f} tokens/s")
        print(f"ratio tokenizers / python: mean {statistics.mean(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
        print(f"outputs byte-identical (same ids): {same}")


if __name__ == "__main__":
    main()
