"""GPT-2 BPE and BERT WordPiece in preprocessing: libai's Python code against the ``tokenizers`` backend.

    python benchmarks/bench_tokenizer_speed.py            # ~2 MB corpus, 3 alternating rounds
    python benchmarks/bench_tokenizer_speed.py --mb 8 --rounds 5 --tokenizers gpt2

Both paths run ``preprocess_jsonl`` (the logic of tools/preprocess_data.py, one worker,
``--append-eod`` for GPT-2) with the same tokenizer over Python's own documentation
(``pydoc_data.topics``, repeated to ``--mb``), once with ``use_fast_backend=False`` and once
with the backend, in alternating rounds. It prints tokens/s of each, their ratio per round and
whether the written ``.bin``/``.idx`` files are byte-identical (same ids), then ``encode``
alone over the distinct documents in CPU time. BERT sends only pure-ASCII text to the backend
(see libai/tokenizer/fast_backend.py), so its gain depends on the corpus.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import pydoc_data.topics as topics  # noqa: E402

import libai  # noqa: E402,F401  (before oneflow)
from libai.data.data_utils.preprocess import preprocess_jsonl  # noqa: E402
from libai.tokenizer import BertTokenizer, GPT2Tokenizer, train_vocab  # noqa: E402


def _run(corpus: str, prefix: str, tokenizer: Any, fast: bool) -> float:
    tokenizer.use_fast_backend = fast
    if hasattr(tokenizer, "clear_cache"):
        tokenizer.clear_cache()  # the Python BPE must not reuse the previous round's results
    start = time.perf_counter()
    summary = preprocess_jsonl(corpus, prefix, tokenizer, append_eod=isinstance(tokenizer, GPT2Tokenizer),
                               workers=1, log_interval=0, log=lambda msg: None)
    return summary.tokens / (time.perf_counter() - start)


def _encode_rate(texts: List[str], tokenizer: Any, fast: bool) -> float:
    """Tokens per CPU second of ``encode`` alone over the distinct documents."""
    tokenizer.use_fast_backend = fast
    if hasattr(tokenizer, "clear_cache"):
        tokenizer.clear_cache()
    start = time.process_time()
    tokens = sum(len(tokenizer.encode(text)) for text in texts)
    return tokens / (time.process_time() - start)


def _same_files(a: str, b: str) -> bool:
    return all(open(a + ext, "rb").read() == open(b + ext, "rb").read() for ext in (".bin", ".idx"))


def _tokenizer(kind: str, base: str, work: str, vocab_size: int) -> Any:
    if kind == "gpt2":
        vocab, merges = train_vocab(base, os.path.join(work, "bpe"), kind="bpe",
                                    vocab_size=vocab_size, json_key="text")
        return GPT2Tokenizer(vocab_file=vocab, merges_file=merges)
    vocab = train_vocab(base, os.path.join(work, "wordpiece"), kind="wordpiece",
                        vocab_size=vocab_size, json_key="text")
    return BertTokenizer(vocab_file=vocab[0])


def _documents(max_docs: int) -> List[str]:
    """The distinct documentation topics (the first ``max_docs``; 0: all)."""
    texts = [text for _, text in sorted(topics.topics.items())]
    return texts[:max_docs] if max_docs else texts


def _write_corpus(path: str, texts: List[str], megabytes: float) -> int:
    """The texts as JSON lines, repeated to ``megabytes`` (at least once); return the bytes."""
    lines = [json.dumps({"text": text}) + "\n" for text in texts]
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        while True:
            for line in lines:
                out.write(line)
                written += len(line.encode("utf-8"))
            if written >= megabytes * 1e6:
                return written


def _compare(kind: str, corpus: str, work: str, tokenizer: Any, rounds: int, max_docs: int) -> None:
    python_rates, fast_rates = [], []
    for i in range(rounds):
        python_rates.append(_run(corpus, os.path.join(work, f"{kind}_python"), tokenizer, fast=False))
        fast_rates.append(_run(corpus, os.path.join(work, f"{kind}_fast"), tokenizer, fast=True))
        print(f"{kind} round {i + 1}: python {python_rates[-1]:,.0f} tokens/s, tokenizers "
              f"{fast_rates[-1]:,.0f} tokens/s, ratio {fast_rates[-1] / python_rates[-1]:.2f}")
    texts = _documents(max_docs)
    slow, fast = _encode_rate(texts, tokenizer, False), _encode_rate(texts, tokenizer, True)
    ascii_share = sum(t.isascii() for t in texts) / len(texts)
    print(f"{kind} encode alone ({len(texts)} distinct documents, {ascii_share:.0%} pure ASCII): "
          f"python {slow:,.0f}, tokenizers {fast:,.0f} tokens per CPU second, ratio {fast / slow:.2f}")
    same = _same_files(os.path.join(work, f"{kind}_python_text_document"),
                       os.path.join(work, f"{kind}_fast_text_document"))
    ratios = [f / p for f, p in zip(fast_rates, python_rates)]
    print(f"{kind} python: mean {statistics.mean(python_rates):,.0f} tokens/s")
    print(f"{kind} tokenizers backend: mean {statistics.mean(fast_rates):,.0f} tokens/s")
    print(f"{kind} ratio tokenizers / python: mean {statistics.mean(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    print(f"{kind} outputs byte-identical (same ids): {same}")


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=2.0, help="corpus size in megabytes")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokenizers", nargs="+", default=["gpt2", "bert"], choices=["gpt2", "bert"])
    parser.add_argument("--max-docs", type=int, default=0,
                        help="distinct documents for the vocabularies and encode alone (0: all 79)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus.jsonl")
        size = _write_corpus(corpus, _documents(args.max_docs), args.mb)
        base = os.path.join(work, "vocab_base.jsonl")
        _write_corpus(base, _documents(args.max_docs), 0.0)
        print(f"corpus: {size / 1e6:.1f} MB of Python documentation")
        for kind in args.tokenizers:
            tokenizer = _tokenizer(kind, base, work, args.vocab_size)
            print(f"{kind}: {type(tokenizer).__name__}, vocabulary {len(tokenizer)}")
            _compare(kind, corpus, work, tokenizer, args.rounds, args.max_docs)


if __name__ == "__main__":
    main()
