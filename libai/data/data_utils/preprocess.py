"""JSON-lines corpus → tokenized, memory-mapped indexed datasets (the logic of
``tools/preprocess_data.py``).

Each input line is one JSON object; the text under each of ``json_keys`` is one document.
For every key the output is ``{output_prefix}_{key}_{level}.bin/.idx`` where ``level`` is
``sentence`` when sentences are split (BERT/T5 sampling needs them) and ``document`` otherwise
(GPT only needs documents). That name scheme is the one LiBai and Megatron users expect.

Tokenization runs in a pool of worker processes (``workers > 1``) fed in order-preserving
chunks, so the output is byte-identical whatever the number of workers. A malformed line is
reported with its line number and skipped (or stops the run with ``strict=True``); nothing is
dropped silently, and the summary counts what was skipped.
"""
import json
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from libai.data.data_utils.indexed_dataset import (
    MMapIndexedDatasetBuilder,
    data_file_path,
    index_file_path,
    make_builder,
)
from libai.data.data_utils.sentence_splitter import split_sentences

__all__ = ["LineEncoder", "MalformedLineError", "PreprocessSummary", "output_prefix_for", "preprocess_jsonl"]


class MalformedLineError(ValueError):
    """A line that is not a JSON object with string values under every requested key."""


@dataclass
class EncodedLine:
    """What a worker sends back for one input line."""

    line_no: int
    num_bytes: int
    documents: Optional[Dict[str, List[np.ndarray]]] = None  # key -> token ids of each sentence
    error: Optional[str] = None
    blank: bool = False


@dataclass
class PreprocessSummary:
    """Counts of one run; ``skipped`` lists ``(line number, reason)`` of every skipped line."""

    documents: int = 0
    sentences: int = 0
    tokens: int = 0
    bytes_read: int = 0
    blank_lines: int = 0
    seconds: float = 0.0
    skipped: List[Tuple[int, str]] = field(default_factory=list)
    outputs: Dict[str, str] = field(default_factory=dict)  # key -> output prefix

    def describe(self) -> str:
        rate = self.tokens / self.seconds if self.seconds > 0 else float("nan")
        return (
            f"done: {self.documents} documents, {self.sentences} sentences, {self.tokens} tokens "
            f"in {self.seconds:.2f}s ({rate:.0f} tokens/s); skipped {len(self.skipped)} malformed "
            f"line(s), ignored {self.blank_lines} blank line(s)"
        )


class LineEncoder:
    """Turns one raw input line into token ids per key. Picklable: workers get a copy.

    Args:
        tokenizer: any object with ``encode(text, add_special_tokens=False) -> List[int]`` and,
            when ``append_eod``, ``eod_id``.
        json_keys: the keys whose text is tokenized (each becomes its own dataset).
        split_sentences: store each sentence as an item (BERT/T5) instead of one item per document.
        append_eod: append ``tokenizer.eod_id`` to each document so that GPT samples, which
            span documents, see where one ends.
        keep_newlines: with ``split_sentences``, each sentence keeps the whitespace and line
            breaks that follow it (see :func:`split_sentences`).
    """

    def __init__(
        self, tokenizer: Any, json_keys: Sequence[str] = ("text",), split_sentences: bool = False,
        append_eod: bool = False, keep_newlines: bool = False,
    ) -> None:
        if append_eod and getattr(tokenizer, "eod_id", None) is None:
            raise ValueError("append_eod needs a tokenizer with an eod_id; this one has none")
        self.tokenizer = tokenizer
        self.json_keys = list(json_keys)
        self.split_sentences = split_sentences
        self.append_eod = append_eod
        self.keep_newlines = keep_newlines

    def encode(self, item: Tuple[int, bytes]) -> EncodedLine:
        line_no, raw = item
        result = EncodedLine(line_no=line_no, num_bytes=len(raw))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            result.error = f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
            return result
        if not text.strip():
            result.blank = True
            return result
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            result.error = f"invalid JSON ({exc.msg} at column {exc.colno})"
            return result
        if not isinstance(record, dict):
            result.error = f"expected a JSON object, got {type(record).__name__}"
            return result
        documents = {}
        for key in self.json_keys:
            if key not in record:
                result.error = f"missing key {key!r} (keys present: {sorted(record)[:10]})"
                return result
            value = record[key]
            if not isinstance(value, str):
                result.error = f"value of {key!r} is {type(value).__name__}, expected a string"
                return result
            documents[key] = self._tokenize(value)
        result.documents = documents
        return result

    def _tokenize(self, text: str) -> List[np.ndarray]:
        pieces = split_sentences(text, self.keep_newlines) if self.split_sentences else [text]
        sentences = []
        for piece in pieces:
            ids = list(self.tokenizer.encode(piece, add_special_tokens=False))
            if ids or not self.split_sentences:
                sentences.append(ids)
        if self.append_eod:
            if sentences:
                sentences[-1].append(int(self.tokenizer.eod_id))
            else:
                sentences.append([int(self.tokenizer.eod_id)])
        # Arrays pickle ~10x faster than lists of ints on their way back from a worker.
        return [np.asarray(ids, dtype=np.int64) for ids in sentences]


# A worker process's own encoder, set once by the pool initializer (never used in the parent).
_worker_encoder: Optional[LineEncoder] = None


def _init_worker(encoder: LineEncoder) -> None:
    global _worker_encoder
    _worker_encoder = encoder


def _encode_in_worker(item: Tuple[int, bytes]) -> EncodedLine:
    return _worker_encoder.encode(item)  # type: ignore[union-attr]


def output_prefix_for(output_prefix: str, key: str, split_sentences: bool) -> str:
    """``{output_prefix}_{key}_{document|sentence}``: the prefix to give the datasets."""
    return f"{output_prefix}_{key}_{'sentence' if split_sentences else 'document'}"


def _numbered_lines(path: str) -> Iterator[Tuple[int, bytes]]:
    with open(path, "rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            yield line_no, raw.rstrip(b"\r\n")


class _Progress:
    """Prints a throughput line every ``interval`` documents."""

    def __init__(self, interval: int, log: Callable[[str], None]) -> None:
        self.interval, self.log = interval, log
        self.start = time.perf_counter()

    def update(self, summary: PreprocessSummary) -> None:
        if self.interval <= 0 or summary.documents % self.interval:
            return
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        self.log(
            f"processed {summary.documents} documents "
            f"({summary.documents / elapsed:.1f} docs/s, {summary.tokens / elapsed:.0f} tokens/s, "
            f"{summary.bytes_read / elapsed / 1e6:.2f} MB/s)"
        )


def preprocess_jsonl(
    input_path: str,
    output_prefix: str,
    tokenizer: Any,
    json_keys: Sequence[str] = ("text",),
    split_sentences: bool = False,
    append_eod: bool = False,
    workers: int = 1,
    chunk_size: int = 64,
    log_interval: int = 1000,
    strict: bool = False,
    vocab_size: Optional[int] = None,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True),
    dataset_impl: str = "mmap",
    keep_newlines: bool = False,
) -> PreprocessSummary:
    """Tokenize a JSON-lines file into one indexed dataset per key; return the run's summary.

    ``dataset_impl`` picks the ``.idx`` layout by LiBai's names: ``"mmap"`` (Megatron-LM's and
    LiBai's ``MMIDIDX``, the default), ``"lazy"``/``"cached"`` (their older ``TNTIDX``) or
    ``"libai"`` (libai's first layout, ``LBTXTIDX``); see :func:`make_builder`. With ``mmap`` and
    ``libai`` the token dtype is the smallest that holds ``vocab_size`` (default:
    ``len(tokenizer)`` or ``tokenizer.vocab_size``); ``lazy``/``cached`` store int32. Raises :class:`MalformedLineError` on the first bad line when
    ``strict``; otherwise each bad line is logged as ``LINE N: reason`` and skipped.
    """
    if not os.path.isfile(input_path):
        raise FileNotFoundError(f"input file {input_path} does not exist (expected JSON lines)")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    out_dir = os.path.dirname(os.path.abspath(output_prefix))
    os.makedirs(out_dir, exist_ok=True)
    encoder = LineEncoder(tokenizer, json_keys, split_sentences, append_eod, keep_newlines)
    size = vocab_size if vocab_size is not None else _vocab_size_of(tokenizer)
    prefixes = {key: output_prefix_for(output_prefix, key, split_sentences) for key in json_keys}
    builders = {key: make_builder(data_file_path(p), dataset_impl, size) for key, p in prefixes.items()}
    summary = PreprocessSummary(outputs=dict(prefixes))
    progress = _Progress(log_interval, log)
    start = time.perf_counter()
    try:
        for encoded in _encoded_lines(encoder, input_path, workers, chunk_size):
            _consume(encoded, builders, summary, strict, input_path, log)
            if encoded.documents is not None:
                progress.update(summary)
    except BaseException:
        for builder in builders.values():  # leave no half-written dataset behind
            builder.discard()
        raise
    for key, builder in builders.items():
        builder.finalize(index_file_path(prefixes[key]))
    summary.seconds = time.perf_counter() - start
    log(summary.describe())
    return summary


def _encoded_lines(
    encoder: LineEncoder, input_path: str, workers: int, chunk_size: int
) -> Iterator[EncodedLine]:
    lines = _numbered_lines(input_path)
    if workers == 1:
        for item in lines:
            yield encoder.encode(item)
        return
    context = multiprocessing.get_context(_start_method())
    with context.Pool(workers, initializer=_init_worker, initargs=(encoder,)) as pool:
        yield from pool.imap(_encode_in_worker, lines, chunksize=max(1, chunk_size))


def _start_method() -> str:
    """``fork`` where it exists: a spawned worker re-imports libai and OneFlow (seconds per
    worker), a forked one starts at once. Workers only run Python tokenizer code, never OneFlow,
    the same situation as OneFlow's own DataLoader workers, which fork too."""
    methods = multiprocessing.get_all_start_methods()
    return "fork" if "fork" in methods else "spawn"


def _consume(
    encoded: EncodedLine, builders: Dict[str, MMapIndexedDatasetBuilder], summary: PreprocessSummary,
    strict: bool, input_path: str, log: Callable[[str], None],
) -> None:
    summary.bytes_read += encoded.num_bytes + 1
    if encoded.blank:
        summary.blank_lines += 1
        return
    if encoded.error is not None:
        message = f"{input_path}:{encoded.line_no}: {encoded.error}"
        if strict:
            raise MalformedLineError(message + " (--strict: stopping; fix the line or drop --strict to skip it)")
        summary.skipped.append((encoded.line_no, encoded.error))
        log(f"LINE {encoded.line_no} skipped: {message}")
        return
    for key, sentences in encoded.documents.items():  # type: ignore[union-attr]
        builder = builders[key]
        for sentence in sentences:
            builder.add_item(sentence)
            summary.tokens += len(sentence)
        builder.end_document()
        summary.sentences += len(sentences)
    summary.documents += 1


def _vocab_size_of(tokenizer: Any) -> Optional[int]:
    # len() counts added special tokens that vocab_size may leave out: take the larger.
    sizes = [getattr(tokenizer, "vocab_size", None)]
    if hasattr(tokenizer, "__len__"):
        sizes.append(len(tokenizer))
    known = [int(s) for s in sizes if s is not None]
    return max(known) if known else None
