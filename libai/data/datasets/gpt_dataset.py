"""GPT pre-training samples: contiguous token windows over shuffled documents.

See :mod:`libai.data.data_utils.gpt_index` for how windows are laid over the corpus. A sample
is ``max_seq_length + 1`` consecutive tokens ``t``; the model reads ``t[:-1]`` and predicts
``t[1:]``. Documents are concatenated (with the end-of-document token when the corpus was made
with ``--append-eod``), so no sample carries padding.
"""
import logging
from typing import Any, Optional, Sequence, Union

import numpy as np
import oneflow as flow
from oneflow.utils.data import Dataset

from libai.data.data_utils.gpt_index import build_gpt_indices
from libai.data.data_utils.indexed_dataset import MMapIndexedDataset
from libai.data.data_utils.sentence_dataset import resolve_num_samples
from libai.data.data_utils.text_split import TextSplit
from libai.data.structures import DistTensorData, Instance

logger = logging.getLogger(__name__)

__all__ = ["GPT2Dataset", "GPTDataset"]


class GPT2Dataset(Dataset):
    """Language-model samples ``Instance(input_ids, labels)`` of ``max_seq_length`` tokens.

    Args:
        name: a label for logs and cache file names (e.g. ``"gpt-2"``).
        tokenizer: unused (kept so configs can pass one uniformly to every text dataset).
        data_prefix: prefix of the corpus made by ``tools/preprocess_data.py``.
        indexed_dataset: an opened corpus, instead of ``data_prefix``.
        max_seq_length: tokens per sample given to the model.
        num_samples: samples wanted; the number of epochs over the split follows from it.
            ``None`` means one epoch. ``max_num_samples`` is LiBai's name for it (either works).
        seed: fixes the document order of each epoch and the sample order.
        split, splits_string: which part of the corpus, by document ratios (``"949,50,1"``).
        cache_dir: where index files are cached (default: beside the data).

    ``labels`` is placed on the last pipeline stage (``placement_idx=-1``), where the loss is.
    """

    def __init__(
        self,
        name: str = "gpt-2",
        tokenizer: Any = None,
        data_prefix: Optional[str] = None,
        indexed_dataset: Optional[MMapIndexedDataset] = None,
        max_num_samples: Optional[int] = None,
        max_seq_length: int = 1024,
        seed: int = 1234,
        num_samples: Optional[int] = None,
        split: Union[str, int] = "train",
        splits_string: Union[str, Sequence[float]] = "949,50,1",
        cache_dir: Optional[str] = None,
    ) -> None:
        num_samples = resolve_num_samples(num_samples, max_num_samples, "GPT2Dataset")
        self.name = name
        self.max_seq_length = int(max_seq_length)
        self.seed = int(seed)
        self.text = TextSplit(data_prefix, indexed_dataset, split, splits_string, cache_dir)
        self.indexed = self.text.indexed
        documents = self.text.documents
        doc_sizes = self.indexed.document_sizes
        params = {"seq_length": self.max_seq_length, "num_samples": num_samples, "seed": self.seed}
        result = self.text.cached_indices(
            "gpt", params, ("doc_idx", "sample_idx", "shuffle_idx"),
            lambda: build_gpt_indices(doc_sizes, documents, self.max_seq_length, num_samples, self.seed),
        )
        self.index_cache_hit = result.hit
        self.index_files = result.paths
        self.doc_idx = result.arrays["doc_idx"]
        self.sample_idx = result.arrays["sample_idx"]
        self.shuffle_idx = result.arrays["shuffle_idx"]
        logger.info(
            "%s (%s): %d samples of %d tokens over %d documents (index cache %s)", name,
            self.text.split_name, len(self), self.max_seq_length, len(documents),
            "reused" if self.index_cache_hit else "built",
        )

    def __len__(self) -> int:
        return len(self.shuffle_idx)

    def tokens(self, idx: int) -> np.ndarray:
        """The ``max_seq_length + 1`` token ids of sample ``idx`` (int64)."""
        if not -len(self) <= idx < len(self):
            raise IndexError(f"sample {idx} out of range for {self.name} with {len(self)} samples")
        j = int(self.shuffle_idx[idx])
        (first, first_offset), (last, last_offset) = self.sample_idx[j], self.sample_idx[j + 1]
        first, first_offset, last, last_offset = int(first), int(first_offset), int(last), int(last_offset)
        if first == last:
            parts = [self.indexed.get_document(int(self.doc_idx[first]), first_offset, last_offset - first_offset + 1)]
        else:
            parts = [self.indexed.get_document(int(self.doc_idx[first]), first_offset)]
            parts += [self.indexed.get_document(int(self.doc_idx[p])) for p in range(first + 1, last)]
            parts.append(self.indexed.get_document(int(self.doc_idx[last]), 0, last_offset + 1))
        return np.concatenate(parts).astype(np.int64)

    def __getitem__(self, idx: int) -> Instance:
        tokens = self.tokens(idx)
        return Instance(
            input_ids=DistTensorData(flow.tensor(tokens[:-1], dtype=flow.long)),
            labels=DistTensorData(flow.tensor(tokens[1:], dtype=flow.long), placement_idx=-1),
        )


GPTDataset = GPT2Dataset
