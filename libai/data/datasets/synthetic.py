"""Synthetic datasets: deterministic random samples for smoke tests, benchmarks and comparing
parallel layouts, with no files to prepare."""
from typing import Any

import numpy as np
import oneflow as flow
from oneflow.utils.data import Dataset

from libai.data.structures import DistTensorData, Instance

__all__ = ["SyntheticLMDataset", "SyntheticImageDataset"]


class SyntheticLMDataset(Dataset):
    """Token sequences for causal language models: ``input_ids`` and next-token ``labels``.

    Sample ``i`` is drawn from a generator seeded with ``(seed, i)``, so it is the same in
    every process and run, whatever the order samples are read in. Tokens follow a simple
    learnable pattern (each sequence counts up from a random start with a random stride,
    modulo the vocabulary), so a model's loss falls visibly within a few dozen steps.
    """

    def __init__(self, num_samples: int = 1024, seq_length: int = 64, vocab_size: int = 128,
                 seed: int = 0) -> None:
        if num_samples < 1 or seq_length < 1 or vocab_size < 2:
            raise ValueError(
                f"SyntheticLMDataset needs num_samples >= 1, seq_length >= 1, vocab_size >= 2; got "
                f"{num_samples}, {seq_length}, {vocab_size}"
            )
        self.num_samples, self.seq_length = int(num_samples), int(seq_length)
        self.vocab_size, self.seed = int(vocab_size), int(seed)

    def __len__(self) -> int:
        return self.num_samples

    def tokens(self, index: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, index])
        start, stride = rng.integers(0, self.vocab_size), rng.integers(1, 4)
        return (start + stride * np.arange(self.seq_length + 1)) % self.vocab_size

    def __getitem__(self, index: int) -> Any:
        tokens = self.tokens(index)
        return Instance(
            input_ids=DistTensorData(flow.tensor(tokens[:-1], dtype=flow.long)),
            labels=DistTensorData(flow.tensor(tokens[1:], dtype=flow.long), placement_idx=-1),
        )


class SyntheticImageDataset(Dataset):
    """Random images with labels derived from them (the class is the brightest quadrant-ish
    feature), for image-model smoke tests and benchmarks."""

    def __init__(self, num_samples: int = 256, image_size: int = 32, channels: int = 3,
                 num_classes: int = 10, seed: int = 0) -> None:
        self.num_samples, self.image_size = int(num_samples), int(image_size)
        self.channels, self.num_classes, self.seed = int(channels), int(num_classes), int(seed)

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, index: int) -> Any:
        rng = np.random.default_rng([self.seed, index])
        label = int(rng.integers(0, self.num_classes))
        image = rng.normal(size=(self.channels, self.image_size, self.image_size)).astype(np.float32)
        image[:, : label + 1] += 1.0  # a label-dependent pattern a model can learn
        return Instance(
            images=DistTensorData(flow.tensor(image)),
            labels=DistTensorData(flow.tensor(label, dtype=flow.long), placement_idx=-1),
        )
