"""Text data at scale: indexed token datasets, their preprocessing, and sample indexing.

* :mod:`.indexed_dataset` — the memory-mapped ``.bin``/``.idx`` reader and writer;
* :mod:`.index_formats` — the ``.idx`` layouts read and written (Megatron/LiBai ``MMIDIDX`` and
  ``TNTIDX``, libai's ``LBTXTIDX``);
* :mod:`.preprocess` — JSON lines → indexed datasets (``tools/preprocess_data.py``);
* :mod:`.splits`, :mod:`.text_split` — train/valid/test splits by documents;
* :mod:`.gpt_index`, :mod:`.sentence_samples`, :mod:`.index_cache` — sample indices, cached;
* :mod:`.masking` — BERT masking and T5 span corruption;
* :mod:`.blendable_dataset` — weighted, deterministic mixing of datasets.

The names below load their module on first use (:mod:`libai.utils.lazy_exports`): the
preprocessing tool imports only the indexed-dataset writer, not OneFlow.
"""
from typing import TYPE_CHECKING

from libai.utils.lazy_exports import lazy_exports

_MODULES = {  # module -> the names it defines
    "libai.data.data_utils.blendable_dataset": ["BlendableDataset", "build_blending_indices"],
    "libai.data.data_utils.indexed_dataset": [
        "IndexedCachedDataset", "IndexedDataset", "IndexedDatasetError", "MMapIndexedDataset",
        "MMapIndexedDatasetBuilder", "best_fitting_dtype", "get_indexed_dataset", "make_builder"
    ],
    "libai.data.data_utils.splits": ["parse_splits_string", "split_boundaries", "split_documents"],
    "libai.data.data_utils.text_split": ["TextSplit"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from libai.data.data_utils.blendable_dataset import BlendableDataset, build_blending_indices  # noqa: F401
    from libai.data.data_utils.indexed_dataset import (  # noqa: F401
        IndexedCachedDataset,
        IndexedDataset,
        IndexedDatasetError,
        MMapIndexedDataset,
        MMapIndexedDatasetBuilder,
        best_fitting_dtype,
        get_indexed_dataset,
        make_builder,
    )
    from libai.data.data_utils.splits import parse_splits_string, split_boundaries, split_documents  # noqa: F401
    from libai.data.data_utils.text_split import TextSplit  # noqa: F401
