"""Packing short fine-tuning samples into full sequences, and padding batches to buckets.

:class:`PackedDataset` lays the samples of an :class:`~libai.data.datasets.sft.SFTDataset`
end to end, in order, into sequences of ``max_seq_length`` tokens (a sample that does not fit
in the current sequence starts the next one; the rest is padding). Each sample must attend only
to itself, and must see the positions it would see alone, so a packed sequence carries:

- ``attention_mask`` ``[1, seq, seq]`` (boolean): block diagonal, true where query and key
  belong to the same sample; the model's attention adds causality (libai's attention takes
  ``[batch, 1, q, k]`` masks on every parallel layout, and masked weights are exactly zero);
- ``position_ids`` ``[seq]``: each sample numbered from 0 again (models with learned
  positions read them; rotary attention depends on relative positions only);
- ``labels``: each sample's own shifted labels, so no position is trained to predict the
  next sample's first token.

The loss of a packed batch is therefore the loss of the same samples unpacked: the same tokens
with the same targets, averaged over the same count (tests/data/test_sft_packing.py compares
losses and gradients).

:class:`PadCollate` is the collate of ``padding="none"`` datasets in Eager runs: it pads each
batch to the smallest bucket that holds its longest sample instead of to ``max_seq_length``.
"""
from typing import List, Optional, Sequence

import numpy as np
import oneflow as flow
from oneflow.utils.data import Dataset

from libai.data.datasets.sft import IGNORE_INDEX, SFTDataset, padded_instance
from libai.data.structures import DistTensorData, Instance

__all__ = ["PackedDataset", "PadCollate"]


class PackedDataset(Dataset):
    """Sequences of ``max_seq_length`` tokens, each holding whole samples of ``dataset``.

    Args:
        dataset: an SFT dataset (its ``samples`` are read; its padding does not matter).
        max_seq_length: the packed length (default: the dataset's).
    """

    def __init__(self, dataset: SFTDataset, max_seq_length: Optional[int] = None) -> None:
        self.dataset = dataset
        self.max_seq_length = int(max_seq_length or dataset.max_seq_length)
        self.pad_token_id = dataset.pad_token_id
        self.packs: List[List[int]] = []
        used = self.max_seq_length
        for index, sample in enumerate(dataset.samples):
            length = len(sample.input_ids)
            if length > self.max_seq_length:
                raise ValueError(
                    f"{sample.where}: {length} tokens do not fit in a packed sequence of "
                    f"{self.max_seq_length}; pack to at least the dataset's max_seq_length "
                    f"({dataset.max_seq_length})"
                )
            if used + length > self.max_seq_length:
                self.packs.append([])
                used = 0
            self.packs[-1].append(index)
            used += length

    def __len__(self) -> int:
        return len(self.packs)

    def __getitem__(self, index: int) -> Instance:
        ids: List[int] = []
        labels: List[int] = []
        positions: List[int] = []
        segment: List[int] = []
        for number, sample_index in enumerate(self.packs[index]):
            sample = self.dataset.samples[sample_index]
            ids += sample.input_ids
            labels += sample.labels
            positions += range(len(sample.input_ids))
            segment += [number] * len(sample.input_ids)
        fill = self.max_seq_length - len(ids)
        ids += [self.pad_token_id] * fill
        labels += [IGNORE_INDEX] * fill
        positions += range(fill)
        segment += [-1] * fill  # the padding is one more block (it attends to itself only)
        blocks = np.asarray(segment)
        mask = (blocks[:, None] == blocks[None, :])[None]
        return Instance(
            input_ids=DistTensorData(flow.tensor(ids, dtype=flow.long)),
            labels=DistTensorData(flow.tensor(labels, dtype=flow.long), placement_idx=-1),
            attention_mask=DistTensorData(flow.tensor(mask, dtype=flow.bool)),
            position_ids=DistTensorData(flow.tensor(positions, dtype=flow.long)),
        )

    def packing_ratio(self) -> float:
        """Real tokens over all tokens of the packed sequences (1.0 = no padding)."""
        real = sum(len(sample.input_ids) for sample in self.dataset.samples)
        return real / float(max(1, len(self.packs) * self.max_seq_length))


class PadCollate:
    """Stack unpadded SFT samples, padding the batch to the smallest fitting bucket.

    Args:
        pad_token_id: the id written into the padding (its labels are the ignore index).
        buckets: allowed lengths, ascending; the longest is the most a batch may need.
            Graph mode compiles one graph per shape, so keep the list short.
    """

    def __init__(self, pad_token_id: int, buckets: Sequence[int]) -> None:
        if not buckets or list(buckets) != sorted(buckets):
            raise ValueError(f"buckets must be a non-empty ascending list, got {list(buckets)}")
        self.pad_token_id = int(pad_token_id)
        self.buckets = [int(b) for b in buckets]

    def __call__(self, samples: List[Instance]) -> Instance:
        longest = max(int(s.input_ids.tensor.shape[0]) for s in samples)
        fitting = [b for b in self.buckets if b >= longest]
        if not fitting:
            raise ValueError(
                f"a batch holds a sample of {longest} tokens, longer than the largest bucket "
                f"{self.buckets[-1]}; add a bucket of at least max_seq_length"
            )
        return Instance.stack([
            padded_instance(s.input_ids.tensor.tolist(), s.labels.tensor.tolist(), fitting[0],
                            self.pad_token_id)
            for s in samples
        ])

    def __repr__(self) -> str:
        return f"PadCollate(pad_token_id={self.pad_token_id}, buckets={self.buckets})"

