"""The shared core of supervised fine-tuning datasets: masking, truncation, padding.

A fine-tuning sample is a list of :class:`Segment`\\ s (text or ids), each either prompt or
response. :class:`SFTDataset` tokenizes the text the segments form as one text (the ids
``apply_chat_template`` gives, what the model sees at inference) and splits the ids at the
segment boundaries (:func:`encode_segments`), then:

- **masks**: ``labels`` hold the ignore index (-100, what libai's LM losses skip) wherever the
  next token is not a response token, so the loss is on responses only; ``train_on_input=True``
  trains on every token instead. libai's causal LMs take labels already shifted: position ``t``
  predicts ``labels[t]``, so ``labels[t] = input_ids[t + 1]`` when token ``t + 1`` is trained,
  and the last position has no target.
- **truncates** to ``max_seq_length``: ``"keep_response"`` (default) cuts the oldest tokens
  after the leading BOS, never touching the last response; a sample whose last response does
  not fit even then is skipped and named. ``"right"`` cuts the end (responses too). The number
  of truncated samples is logged with the dataset's summary.
- **pads** to ``max_seq_length`` (``padding="max_length"``: one shape, what Graph mode needs),
  or not at all (``padding="none"``: :class:`~libai.data.datasets.packing.PadCollate` pads each
  batch to a bucket).

Samples are :class:`~libai.data.structures.Instance` ``(input_ids, labels)`` (labels on the last
pipeline stage); bad records are skipped with their place named (:mod:`.sft_records`).
"""
import logging
from dataclasses import dataclass
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple, Union

import oneflow as flow
from oneflow.utils.data import Dataset

from libai.data.datasets.sft_records import BadSample, Record, SampleReport, read_records
from libai.data.structures import DistTensorData, Instance

__all__ = [
    "IGNORE_INDEX", "Segment", "SFTDataset", "TokenizedSample", "encode_segments", "shifted_labels",
]

logger = logging.getLogger(__name__)

#: The label of a position the loss skips (libai's ``LMLoss`` default).
IGNORE_INDEX = -100
_TRUNCATION = ("keep_response", "right")
_PADDING = ("max_length", "none")


class Segment(NamedTuple):
    """A run of text (or token ids) that is either prompt or response."""

    content: Union[str, Sequence[int]]
    response: bool


@dataclass
class TokenizedSample:
    """A sample ready for batching: ids, shifted labels, and where it came from."""

    input_ids: List[int]
    labels: List[int]
    where: str

    @property
    def num_trained(self) -> int:
        return sum(label != IGNORE_INDEX for label in self.labels)


def shifted_labels(input_ids: Sequence[int], trained: Sequence[bool]) -> List[int]:
    """Labels for libai's causal LMs: position ``t`` targets token ``t + 1`` if it is trained."""
    labels = [
        token if keep else IGNORE_INDEX for token, keep in zip(input_ids[1:], trained[1:])
    ]
    return labels + [IGNORE_INDEX] if input_ids else []


class SFTDataset(Dataset):
    """Base of the fine-tuning datasets: subclasses say how a record becomes segments.

    Args:
        source: a ``.jsonl`` path, a list of paths, or rows in memory (a ``datasets.Dataset``).
        tokenizer: ``encode(text, add_special_tokens=False)``, ``eos_token_id``,
            ``pad_token_id`` (None: the EOS id), ``bos_token_id`` (may be None).
        max_seq_length: tokens per sample (and the padded length).
        train_on_input: put labels on prompt tokens too (default: responses only).
        truncation: ``"keep_response"`` or ``"right"`` (see the module docstring).
        padding: ``"max_length"`` or ``"none"``.
        name: for log lines (default: the class name and the source).
    """

    def __init__(
        self,
        source: Any,
        tokenizer: Any,
        max_seq_length: int = 512,
        *,
        train_on_input: bool = False,
        truncation: str = "keep_response",
        padding: str = "max_length",
        name: Optional[str] = None,
    ) -> None:
        if truncation not in _TRUNCATION:
            raise ValueError(f"truncation={truncation!r}: use one of {_TRUNCATION}")
        if padding not in _PADDING:
            raise ValueError(f"padding={padding!r}: use one of {_PADDING}")
        if max_seq_length < 2:
            raise ValueError(f"max_seq_length must be at least 2 tokens, got {max_seq_length}")
        self.tokenizer = tokenizer
        self.max_seq_length = int(max_seq_length)
        self.train_on_input = bool(train_on_input)
        self.truncation = truncation
        self.padding = padding
        self.pad_token_id = _pad_id(tokenizer)
        label = source if isinstance(source, str) else type(source).__name__
        self.report = SampleReport(name or f"{type(self).__name__}({label})")
        self.samples: List[TokenizedSample] = []
        for item in read_records(source):
            try:
                if isinstance(item, BadSample):
                    raise item
                self.samples.append(self._tokenize(item))
            except BadSample as bad:
                self.report.skip(bad)
        self.report.kept = len(self.samples)
        logger.info("%s%s", self.report.summary(), self._truncation_note())
        self.report.check_not_empty()

    # ------------------------------------------------------------------ what subclasses say
    def segments(self, record: Record) -> List[Segment]:
        """The prompt and response segments of ``record`` (raise :class:`BadSample`)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ tokenization
    def _tokenize(self, record: Record) -> TokenizedSample:
        ids: List[int] = []
        response: List[bool] = []
        last_response = None
        segments = self.segments(record)
        for segment, part in zip(segments, encode_segments(self._encode, segments)):
            if segment.response and part:
                last_response = len(ids)
            ids += part
            response += [segment.response] * len(part)
        if last_response is None:
            raise BadSample(record.where, "the sample has no response tokens",
                            "give it a non-empty response (or remove it)", "no response")
        length = len(ids)
        ids, response = self._truncate(record.where, ids, response, last_response)
        trained = [True] * len(ids) if self.train_on_input else response
        sample = TokenizedSample(ids, shifted_labels(ids, trained), record.where)
        if sample.num_trained == 0 and len(ids) < length:
            raise BadSample(record.where, f"truncation='right' to {self.max_seq_length} tokens cut "
                            f"off the whole response (the sample has {length})",
                            "raise max_seq_length or use truncation='keep_response'", "too long")
        if sample.num_trained == 0:
            raise BadSample(record.where, "no token of the sample is trained after masking (the "
                            "response starts the sample)", "give it a prompt before the response",
                            "no response")
        return sample

    def _encode(self, content: Union[str, Sequence[int]]) -> List[int]:
        if isinstance(content, str):
            return list(self.tokenizer.encode(content, add_special_tokens=False)) if content else []
        return [int(token) for token in content]

    def _truncate(
        self, where: str, ids: List[int], response: List[bool], last_response: int
    ) -> Tuple[List[int], List[bool]]:
        excess = len(ids) - self.max_seq_length
        if excess <= 0:
            return ids, response
        if self.truncation == "right":
            ids, response = ids[: self.max_seq_length], response[: self.max_seq_length]
        else:
            head = 1 if ids[0] == getattr(self.tokenizer, "bos_token_id", None) else 0
            if head + excess > last_response:
                raise BadSample(
                    where,
                    f"the sample has {len(ids)} tokens, and its last response "
                    f"({len(ids) - last_response} tokens) does not fit in max_seq_length="
                    f"{self.max_seq_length} even with the prompt cut",
                    "raise max_seq_length, shorten the response, or use truncation='right'",
                    "too long",
                )
            ids = ids[:head] + ids[head + excess:]
            response = response[:head] + response[head + excess:]
        self.report.truncated += 1
        return ids, response

    def _truncation_note(self) -> str:
        if not self.report.truncated:
            return ""
        how = ("the oldest prompt tokens cut, responses kept" if self.truncation == "keep_response"
               else "cut at the end")
        return f" (truncated to {self.max_seq_length} tokens: {how})"

    # ------------------------------------------------------------------ Dataset
    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> Instance:
        sample = self.samples[index]
        length = self.max_seq_length if self.padding == "max_length" else len(sample.input_ids)
        return padded_instance(sample.input_ids, sample.labels, length, self.pad_token_id)


def encode_segments(
    encode: Callable[[Union[str, Sequence[int]]], List[int]], segments: Sequence[Segment]
) -> List[List[int]]:
    """The token ids of each segment.

    Consecutive text segments are encoded together, as the one text they form (the ids
    ``apply_chat_template`` gives, what the model sees at inference), and the ids are split at
    the segment boundaries: a boundary falls after the tokens that the text before it and the
    whole text share, so a token that straddles a boundary belongs to the later segment.
    """
    pieces: List[List[int]] = []
    run: List[str] = []

    def flush() -> None:
        if not run:
            return
        whole = encode("".join(run))
        bounds, text = [0], ""
        for part in run[:-1]:
            text += part
            bounds.append(max(bounds[-1], _common_prefix(encode(text), whole)))
        bounds.append(len(whole))
        pieces.extend(whole[a:b] for a, b in zip(bounds[:-1], bounds[1:]))
        run.clear()

    for segment in segments:
        if isinstance(segment.content, str):
            run.append(segment.content)
        else:
            flush()
            pieces.append(encode(segment.content))
    flush()
    return pieces


def _common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def padded_instance(
    input_ids: Sequence[int], labels: Sequence[int], length: int, pad_token_id: int
) -> Instance:
    """``Instance(input_ids, labels)`` right-padded to ``length`` (padding is never trained;
    causal attention keeps real tokens from seeing the padding after them)."""
    fill = length - len(input_ids)
    return Instance(
        input_ids=DistTensorData(flow.tensor(list(input_ids) + [pad_token_id] * fill, dtype=flow.long)),
        labels=DistTensorData(
            flow.tensor(list(labels) + [IGNORE_INDEX] * fill, dtype=flow.long), placement_idx=-1
        ),
    )


def _pad_id(tokenizer: Any) -> int:
    for name in ("pad_token_id", "eos_token_id"):
        value = getattr(tokenizer, name, None)
        if value is not None:
            return int(value)
    return 0
