"""What BERT and T5 datasets share: a cached sentence-sample mapping, per-sample random
numbers, and the tokenizer's special ids."""
import logging
from typing import Any, List, Optional, Sequence, Union

import numpy as np
from oneflow.utils.data import Dataset

from libai.data.data_utils.indexed_dataset import MMapIndexedDataset
from libai.data.data_utils.sentence_samples import build_sentence_samples
from libai.data.data_utils.text_split import TextSplit

logger = logging.getLogger(__name__)

__all__ = ["SentenceSampleDataset", "require_token_ids", "resolve_num_samples"]


def resolve_num_samples(num_samples: Optional[int], max_num_samples: Optional[int], dataset: str) -> Optional[int]:
    """The sample count asked for by ``num_samples`` or LiBai's spelling ``max_num_samples``
    (both mean "samples wanted from this split"; ``None``: one pass). Both set to different
    values is an error rather than a silent choice."""
    if num_samples is not None and max_num_samples is not None and int(num_samples) != int(max_num_samples):
        raise ValueError(f"{dataset}: num_samples={num_samples} and max_num_samples={max_num_samples} set the "
                         "same thing to different values; keep one of them")
    return num_samples if num_samples is not None else max_num_samples


def require_token_ids(tokenizer: Any, names: Sequence[str], dataset: str) -> dict:
    """``{name: int}`` for tokenizer attributes ``names``; a clear error when one is missing."""
    if tokenizer is None:
        raise ValueError(f"{dataset} needs a tokenizer (for its special token ids {list(names)})")
    ids = {}
    for name in names:
        value = getattr(tokenizer, name, None)
        if value is None:
            raise ValueError(
                f"{dataset} needs tokenizer.{name}, which {type(tokenizer).__name__} does not provide"
            )
        ids[name] = int(value)
    return ids


class SentenceSampleDataset(Dataset):
    """Base of sentence-based datasets: ``self.mapping`` rows are ``(first, end, target)``.

    Subclasses call :meth:`_setup` with the token budget of one sample and turn a mapping row
    into a sample in ``__getitem__`` using :meth:`sample_rng` and :meth:`sentences`.
    """

    kind = "sentences"

    def _setup(
        self, name: str, data_prefix: Optional[str], indexed_dataset: Optional[MMapIndexedDataset],
        split: Union[str, int], splits_string: Union[str, Sequence[float]], cache_dir: Optional[str],
        max_num_tokens: int, num_samples: Optional[int], seed: int, short_seq_prob: float,
        min_sentences: int,
    ) -> None:
        self.name, self.seed = name, int(seed)
        self.text = TextSplit(data_prefix, indexed_dataset, split, splits_string, cache_dir)
        self.indexed = self.text.indexed
        documents = self.text.documents
        params = {
            "max_num_tokens": int(max_num_tokens), "num_samples": num_samples, "seed": self.seed,
            "short_seq_prob": float(short_seq_prob), "min_sentences": int(min_sentences),
        }
        result = self.text.cached_indices(
            self.kind, params, ("mapping",),
            lambda: {"mapping": build_sentence_samples(
                self.indexed.sizes, self.indexed.doc_idx, documents, int(max_num_tokens), num_samples,
                self.seed, short_seq_prob, min_sentences,
                allow_empty=self.text.split_name != "train",
            )},
        )
        self.mapping = result.arrays["mapping"]
        if not len(self.mapping):
            logger.warning(
                "%s (%s): no document of this held-out split has %d sentence(s), so it gives no "
                "samples (as in LiBai); give it a larger share of the corpus to evaluate on it",
                name, self.text.split_name, min_sentences,
            )
        self.index_cache_hit = result.hit
        self.index_files = result.paths
        logger.info(
            "%s (%s): %d samples over %d documents (index cache %s)", name, self.text.split_name,
            len(self.mapping), len(documents), "reused" if result.hit else "built",
        )

    def __len__(self) -> int:
        return len(self.mapping)

    def sample_rng(self, idx: int) -> np.random.Generator:
        """Random numbers for sample ``idx`` alone: a sample is a function of (seed, idx)."""
        return np.random.default_rng([self.seed, int(idx)])

    def row(self, idx: int) -> tuple:
        if not -len(self) <= idx < len(self):
            raise IndexError(f"sample {idx} out of range for {self.name} with {len(self)} samples")
        first, end, target = (int(v) for v in self.mapping[idx])
        return first, end, target

    def sentences(self, first: int, end: int) -> List[np.ndarray]:
        """Token arrays (int64) of sentences ``first .. end - 1``."""
        return [np.asarray(self.indexed[i], dtype=np.int64) for i in range(first, end)]
