"""Plain text for the base model's pretraining, through the fine-tuning pipeline.

Each ``{"text": ...}`` line is one sample whose every token is trained (text + EOS), so
:class:`~libai.data.datasets.PackedDataset` packs the docstrings into full sequences in which
each docstring attends only to itself.
"""
from typing import Any, List

from libai.data.datasets.sft import Segment, SFTDataset
from libai.data.datasets.sft_records import BadSample, Record


class TextDataset(SFTDataset):
    """``{"text_key": "..."}`` JSON lines trained on every token (EOS appended)."""

    def __init__(self, source: Any, tokenizer: Any, max_seq_length: int = 512,
                 text_key: str = "text", **options: Any) -> None:
        self.text_key = text_key
        options.setdefault("truncation", "right")
        super().__init__(source, tokenizer, max_seq_length, **options)

    def segments(self, record: Record) -> List[Segment]:
        text = record.data.get(self.text_key)
        if not isinstance(text, str) or not text:
            raise BadSample(record.where, f"no {self.text_key!r} text", "give it one", "no response")
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return [Segment(ids, True)]
