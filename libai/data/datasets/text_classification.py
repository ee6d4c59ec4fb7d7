"""Sentence (or sentence-pair) classification from a JSON-lines file, for BERT-style encoders.

Each line is one example, e.g. ``{"text": "a fine film", "label": 1}`` (with ``text_pair_key``
also ``{"text": ..., "text_b": ..., "label": ...}``). Labels are integers ``0..num_labels-1`` (or
floats, for regression with ``label_dtype="float"``). Every sample is
``[CLS] text [SEP] (text_b [SEP])`` padded to ``max_seq_length``, with the fields
``BertForClassification.forward`` takes: ``input_ids``, ``attention_mask``, ``tokentype_ids``,
``labels``.
"""
import json
import os
from typing import Any, List, Optional, Tuple

import oneflow as flow
from oneflow.utils.data import Dataset

from libai.data.structures import DistTensorData, Instance

_LABEL_DTYPES = {"long": flow.long, "float": flow.float}


class TextClassificationDataset(Dataset):
    """Tokenized, padded examples of a JSON-lines classification file (all held in memory).

    Args:
        data_file: the ``.jsonl`` file (one JSON object per line).
        tokenizer: a libai tokenizer with ``encode``, ``cls_token_id``, ``sep_token_id`` and
            ``pad_token_id`` (a ``tokenization`` config gives the trainer's one to each dataset).
        max_seq_length: length of every sample, special tokens included; longer texts are cut
            (the longer of a pair first).
        text_key / text_pair_key / label_key: the JSON keys to read (no pair when ``None``).
        label_dtype: ``"long"`` for class indices, ``"float"`` for regression targets.
    """

    def __init__(
        self,
        data_file: str,
        tokenizer: Any,
        max_seq_length: int = 128,
        text_key: str = "text",
        text_pair_key: Optional[str] = None,
        label_key: str = "label",
        label_dtype: str = "long",
    ) -> None:
        if not os.path.isfile(data_file):
            raise FileNotFoundError(
                f"text classification file {data_file!r} does not exist: write one JSON object "
                f"per line with keys {text_key!r} and {label_key!r} (docs/prepare_text_data.md)"
            )
        if label_dtype not in _LABEL_DTYPES:
            raise ValueError(f"label_dtype must be one of {sorted(_LABEL_DTYPES)}, got {label_dtype!r}")
        if max_seq_length < 3:
            raise ValueError(f"max_seq_length must leave room for [CLS] and [SEP], got {max_seq_length}")
        self.max_seq_length = max_seq_length
        self.label_dtype = _LABEL_DTYPES[label_dtype]
        self.samples = [
            self._encode(tokenizer, record, text_key, text_pair_key, label_key)
            for record in _read_jsonl(data_file, (text_key, label_key))
        ]

    def _encode(self, tokenizer: Any, record: dict, text_key: str, pair_key: Optional[str],
                label_key: str) -> Tuple[List[int], List[int], List[int], Any]:
        first = tokenizer.encode(record[text_key], add_special_tokens=False)
        second = tokenizer.encode(record[pair_key], add_special_tokens=False) if pair_key else None
        first, second = _truncate(first, second, self.max_seq_length - (3 if second is not None else 2))
        ids = [tokenizer.cls_token_id] + first + [tokenizer.sep_token_id]
        types = [0] * len(ids)
        if second is not None:
            ids += second + [tokenizer.sep_token_id]
            types += [1] * (len(second) + 1)
        padding = self.max_seq_length - len(ids)
        mask = [1] * len(ids) + [0] * padding
        ids += [tokenizer.pad_token_id] * padding
        types += [0] * padding
        return ids, types, mask, record[label_key]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> Instance:
        ids, types, mask, label = self.samples[index]
        return Instance(
            input_ids=DistTensorData(flow.tensor(ids, dtype=flow.long)),
            attention_mask=DistTensorData(flow.tensor(mask, dtype=flow.long)),
            tokentype_ids=DistTensorData(flow.tensor(types, dtype=flow.long)),
            labels=DistTensorData(flow.tensor(label, dtype=self.label_dtype), placement_idx=-1),
        )


def _read_jsonl(path: str, required: Tuple[str, ...]) -> List[dict]:
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            missing = [key for key in required if key not in record]
            if missing:
                raise KeyError(f"{path} line {number} lacks the key(s) {missing}; it has {sorted(record)}")
            records.append(record)
    return records


def _truncate(first: List[int], second: Optional[List[int]], budget: int) -> Tuple[List[int], Optional[List[int]]]:
    """Cut the longer sequence one token at a time until both fit in ``budget`` ids."""
    first = list(first)
    second = list(second) if second is not None else None
    while len(first) + (len(second) if second is not None else 0) > budget:
        if second is not None and len(second) > len(first):
            second.pop()
        else:
            first.pop()
    return first, second
