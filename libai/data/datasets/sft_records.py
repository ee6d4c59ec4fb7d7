"""Where fine-tuning samples come from, and how a bad one is named.

Instruction and chat datasets read *records* (one dict per sample) from JSON-lines files, from a
``datasets.Dataset`` (or any sequence of dicts), each record tagged with where it came from
(``train.jsonl:17``, ``datasets.Dataset row 17``) so that every problem found later can name
its place. A bad record never stops the run: it is skipped, named in a warning with what to
change, and counted in the dataset's summary (:class:`SampleReport`). Only a dataset left with
no usable sample at all is an error, because training on it would train on nothing.
"""
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator, List, Mapping, Sequence, Union

__all__ = ["BadSample", "Record", "SampleReport", "read_records"]

logger = logging.getLogger(__name__)

#: What a dataset may be given: a path (or several) to ``.jsonl`` files, or rows in memory.
RecordSource = Union[str, Sequence[str], Sequence[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Record:
    """One sample as read: its fields and where it came from (for messages)."""

    data: Mapping[str, Any]
    where: str


class BadSample(ValueError):
    """A sample that cannot be used: ``where`` it is, what is wrong, and what to change."""

    def __init__(self, where: str, problem: str, fix: str, reason: str = "invalid") -> None:
        super().__init__(f"{where}: {problem}; {fix}")
        self.where, self.problem, self.fix, self.reason = where, problem, fix, reason


def read_records(source: RecordSource) -> Iterator[Union[Record, BadSample]]:
    """Yield the records of ``source`` in order; a line that does not parse as a JSON object
    is yielded as a :class:`BadSample` (the caller reports it and goes on).

    ``source``: a path to a JSON-lines file (one object per line, blank lines ignored), a list
    of such paths, or a sequence of dicts (a ``datasets.Dataset`` is one).
    """
    if isinstance(source, (str, os.PathLike)):
        yield from _read_jsonl(os.fspath(source))
        return
    rows = list(source) if not hasattr(source, "__getitem__") else source
    if len(rows) and all(isinstance(item, (str, os.PathLike)) for item in rows):
        for path in rows:
            yield from _read_jsonl(os.fspath(path))
        return
    kind = type(source).__name__
    for index in range(len(rows)):
        row = rows[index]
        where = f"{kind} row {index}"
        if not isinstance(row, Mapping):
            yield BadSample(where, f"the row is a {type(row).__name__}, not a dict of fields",
                            "give one dict per sample", "not a JSON object")
            continue
        yield Record(row, where)


def _read_jsonl(path: str) -> Iterator[Union[Record, BadSample]]:
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"fine-tuning data {path!r} does not exist: write one JSON object per line "
            "(see docs/sft.md, 'Data formats')"
        )
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                yield BadSample(where, f"the line is not valid JSON ({err.msg} at column "
                                f"{err.colno})", "fix the line or remove it", "JSON does not parse")
                continue
            if not isinstance(row, dict):
                yield BadSample(where, f"the line holds a JSON {type(row).__name__}, not an "
                                "object", "write one JSON object per line", "not a JSON object")
                continue
            yield Record(row, where)


class SampleReport:
    """Counts what happened to a dataset's samples and says it once.

    Each skipped sample is logged as a warning (the first ``max_named`` of them, by place, with
    the fix); :meth:`summary` gives the totals, which the dataset logs when it is built.
    """

    def __init__(self, name: str, max_named: int = 20) -> None:
        self.name = name
        self.max_named = max_named
        self.kept = 0
        self.truncated = 0
        self.skipped: "Counter[str]" = Counter()
        self.examples: List[BadSample] = []

    def skip(self, bad: BadSample) -> None:
        """Record (and, for the first ``max_named``, log) a skipped sample."""
        self.skipped[bad.reason] += 1
        if len(self.examples) < self.max_named:
            self.examples.append(bad)
            logger.warning("%s: skipped %s", self.name, bad)
        elif len(self.examples) == self.max_named and sum(self.skipped.values()) == self.max_named + 1:
            logger.warning("%s: more samples skipped; their count is in the summary", self.name)

    def summary(self) -> str:
        """One line: samples kept, truncated and skipped (by reason)."""
        text = f"{self.name}: {self.kept} samples, {self.truncated} truncated"
        if self.skipped:
            reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(self.skipped.items()))
            text += f", {sum(self.skipped.values())} skipped ({reasons})"
        return text

    def check_not_empty(self) -> None:
        """Raise when no sample survived: a run must not train on nothing without saying so."""
        if self.kept:
            return
        named = "; ".join(str(bad) for bad in self.examples[:3]) or "the source has no records"
        raise ValueError(
            f"{self.name} has no usable sample (every one was skipped: {named}). Fix the data "
            "as the messages say, or raise max_seq_length"
        )
