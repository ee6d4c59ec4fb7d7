"""Throughput of the text data path: preprocessing (tokens/s) and GPT sample loading (samples/s).

    python benchmarks/bench_text_data.py                 # ~4 MB corpus, 1024-token samples
    python benchmarks/bench_text_data.py --mb 16 --batches 100

The corpus is Python's own documentation (``pydoc_data.topics``, shipped with CPython: real
English prose and code), repeated until it reaches ``--mb`` megabytes. A byte-level BPE
vocabulary is trained on it with ``libai.tokenizer.train_vocab``. Everything stays in a
temporary directory (or ``--workdir``) and nothing is downloaded.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from typing import Dict, List

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)

import libai  # noqa: E402,F401  (before oneflow)
from libai.data.data_utils.preprocess import preprocess_jsonl  # noqa: E402
from libai.data.datasets.gpt_dataset import GPT2Dataset  # noqa: E402
from libai.tokenizer import GPT2Tokenizer, train_vocab  # noqa: E402


def make_corpus(path: str, megabytes: float) -> int:
    """Write Python's documentation topics as JSON lines, repeated to ``megabytes``; return bytes."""
    import pydoc_data.topics as topics

    texts = [text for _, text in sorted(topics.topics.items())]
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        while True:  # at least one copy
            for text in texts:
                line = json.dumps({"text": text}) + "\n"
                out.write(line)
                written += len(line.encode("utf-8"))
            if written >= megabytes * 1e6:
                return written


def bench_preprocess(corpus: str, workdir: str, tokenizer: GPT2Tokenizer, workers: int) -> Dict[str, float]:
    prefix = os.path.join(workdir, f"bench_w{workers}")
    start = time.perf_counter()
    summary = preprocess_jsonl(corpus, prefix, tokenizer, append_eod=True, workers=workers,
                               log_interval=0, log=lambda msg: None)
    seconds = time.perf_counter() - start
    return {
        "workers": workers, "documents": summary.documents, "tokens": summary.tokens,
        "seconds": seconds, "tokens/s": summary.tokens / seconds,
        "MB/s": summary.bytes_read / seconds / 1e6, "prefix": summary.outputs["text"],
    }


def bench_loader(prefix: str, seq_length: int, batch_size: int, batches: int, num_workers: int) -> Dict[str, float]:
    """Samples/s through build_nlp_train_loader (the dataset alone when num_workers is None)."""
    dataset = GPT2Dataset(data_prefix=prefix, max_seq_length=seq_length, seed=1234,
                          num_samples=batch_size * (batches + 5), splits_string="1,0,0")
    if num_workers is None:
        for i in range(batch_size * 3):  # warm-up, as for the loaders
            dataset[i]
        start = time.perf_counter()
        for i in range(batch_size * batches):
            dataset[i]
        seconds = time.perf_counter() - start
        return {"path": "dataset[i] directly", "samples/s": batch_size * batches / seconds}
    from libai.data.build import build_nlp_train_loader

    loader, _, _ = build_nlp_train_loader([dataset], train_batch_size=batch_size, num_workers=num_workers)
    iterator = iter(loader)
    for _ in range(3):  # warm-up: worker start-up is not throughput
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        batch = next(iterator)
    seconds = time.perf_counter() - start
    assert tuple(batch.input_ids.tensor.shape) == (batch_size, seq_length)
    return {"path": f"build_nlp_train_loader, num_workers={num_workers}",
            "samples/s": batch_size * batches / seconds}


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=4.0, help="corpus size in megabytes")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--seq-length", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--workdir", default=None, help="keep files here (default: a temporary directory)")
    args = parser.parse_args(argv)
    from tabulate import tabulate

    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        corpus = os.path.join(workdir, "corpus.jsonl")
        size = make_corpus(corpus, args.mb)
        base = os.path.join(workdir, "vocab_base.jsonl")
        make_corpus(base, 0.0)  # one copy of the topics for the vocabulary
        vocab_json, merges = train_vocab(base, os.path.join(workdir, "bpe"), kind="bpe",
                                         vocab_size=args.vocab_size, json_key="text")
        tokenizer = GPT2Tokenizer(vocab_file=vocab_json, merges_file=merges)
        print(f"corpus: {size / 1e6:.1f} MB of Python documentation, BPE vocabulary {len(tokenizer)}")

        runs = [bench_preprocess(corpus, workdir, tokenizer, w) for w in (1, 2)]
        same = all(open(runs[0]["prefix"] + e, "rb").read() == open(runs[1]["prefix"] + e, "rb").read()
                   for e in (".bin", ".idx"))
        print("\npreprocessing (tools/preprocess_data.py logic, GPT2Tokenizer, --append-eod)")
        print(tabulate([[r["workers"], r["documents"], r["tokens"], f"{r['seconds']:.2f}",
                         f"{r['tokens/s']:,.0f}", f"{r['MB/s']:.2f}"] for r in runs],
                       headers=["workers", "documents", "tokens", "seconds", "tokens/s", "MB/s"]))
        print(f"outputs of 1 and 2 workers byte-identical: {same}")

        loads = [bench_loader(runs[0]["prefix"], args.seq_length, args.batch_size, args.batches, w)
                 for w in (None, 0, 2)]
        print(f"\nGPT samples of {args.seq_length} tokens, batch {args.batch_size}, {args.batches} batches")
        print(tabulate([[r["path"], f"{r['samples/s']:,.0f}", f"{r['samples/s'] * args.seq_length:,.0f}"]
                        for r in loads], headers=["path", "samples/s", "tokens/s"]))


if __name__ == "__main__":
    main()
