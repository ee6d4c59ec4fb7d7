"""One split of an indexed corpus: the part every text dataset (GPT, BERT, T5) starts from."""
from typing import Callable, Dict, Optional, Sequence, Union

import numpy as np

from libai.data.data_utils.index_cache import (
    CacheResult,
    cache_stem,
    default_cache_dir,
    fingerprint,
    load_or_build_indices,
)
from libai.data.data_utils.indexed_dataset import MMapIndexedDataset
from libai.data.data_utils.splits import SPLIT_NAMES, split_documents

__all__ = ["TextSplit"]


class TextSplit:
    """The documents of split ``split`` of a corpus, and where its sample indices are cached.

    Args:
        data_prefix: prefix of the ``.bin``/``.idx`` pair (opened unless ``indexed_dataset`` is given).
        indexed_dataset: an already opened :class:`MMapIndexedDataset` (shared between splits).
        split: ``"train"``, ``"valid"`` or ``"test"`` (or 0, 1, 2).
        splits_string: document ratios of the three splits, e.g. ``"949,50,1"``.
        cache_dir: where index ``.npy`` files go; default the data's own directory.
    """

    def __init__(
        self,
        data_prefix: Optional[str] = None,
        indexed_dataset: Optional[MMapIndexedDataset] = None,
        split: Union[str, int] = "train",
        splits_string: Union[str, Sequence[float]] = "949,50,1",
        cache_dir: Optional[str] = None,
    ) -> None:
        if indexed_dataset is None:
            if data_prefix is None:
                raise ValueError(
                    "give data_prefix (the path of the .bin/.idx pair without extension) or indexed_dataset"
                )
            indexed_dataset = MMapIndexedDataset(data_prefix)
        self.indexed = indexed_dataset
        self.prefix = data_prefix if data_prefix is not None else indexed_dataset.path_prefix
        self.start, self.end = split_documents(splits_string, split, indexed_dataset.num_documents)
        names = {v: k for k, v in SPLIT_NAMES.items() if k in ("train", "valid", "test")}
        self.split_name = split if isinstance(split, str) else names[int(split)]
        self.cache_dir = default_cache_dir(self.prefix, cache_dir)
        if self.end <= self.start:
            raise ValueError(
                f"split {self.split_name!r} of {self.prefix!r} is empty: splits_string {splits_string!r} "
                f"over {indexed_dataset.num_documents} documents gives it none; give it a larger weight"
            )

    @property
    def documents(self) -> np.ndarray:
        """Document ids of the split."""
        return np.arange(self.start, self.end, dtype=np.int64)

    def cached_indices(
        self, kind: str, params: Dict[str, object], names: Sequence[str],
        build: Callable[[], Dict[str, np.ndarray]],
    ) -> CacheResult:
        """Arrays built by ``build``, cached under a hash of the corpus layout, split and ``params``."""
        key = fingerprint(
            kind=kind, sizes=self.indexed.sizes, doc_idx=self.indexed.doc_idx,
            documents=[self.start, self.end], **params,
        )
        stem = cache_stem(self.prefix, kind, self.split_name, key)
        return load_or_build_indices(self.cache_dir, stem, names, build)
