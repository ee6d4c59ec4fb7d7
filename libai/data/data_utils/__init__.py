"""Text data at scale: indexed token datasets, their preprocessing, and sample indexing.

* :mod:`.indexed_dataset` — the memory-mapped ``.bin``/``.idx`` reader and writer;
* :mod:`.index_formats` — the ``.idx`` layouts read and written (Megatron/LiBai ``MMIDIDX`` and
  ``TNTIDX``, libai's ``LBTXTIDX``);
* :mod:`.preprocess` — JSON lines → indexed datasets (``tools/preprocess_data.py``);
* :mod:`.splits`, :mod:`.text_split` — train/valid/test splits by documents;
* :mod:`.gpt_index`, :mod:`.sentence_samples`, :mod:`.index_cache` — sample indices, cached;
* :mod:`.masking` — BERT masking and T5 span corruption;
* :mod:`.blendable_dataset` — weighted, deterministic mixing of datasets.
"""
from libai.data.data_utils.blendable_dataset import BlendableDataset, build_blending_indices
from libai.data.data_utils.indexed_dataset import (
    IndexedCachedDataset,
    IndexedDataset,
    IndexedDatasetError,
    MMapIndexedDataset,
    MMapIndexedDatasetBuilder,
    best_fitting_dtype,
    get_indexed_dataset,
    make_builder,
)
from libai.data.data_utils.splits import parse_splits_string, split_boundaries, split_documents
from libai.data.data_utils.text_split import TextSplit

__all__ = [
    "BlendableDataset",
    "IndexedCachedDataset",
    "IndexedDataset",
    "IndexedDatasetError",
    "MMapIndexedDataset",
    "MMapIndexedDatasetBuilder",
    "TextSplit",
    "best_fitting_dtype",
    "build_blending_indices",
    "get_indexed_dataset",
    "make_builder",
    "parse_splits_string",
    "split_boundaries",
    "split_documents",
]
