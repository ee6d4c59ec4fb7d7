"""Which datasets feed each loader: a list mixed into one, weights, and train/valid/test parts.

The loader builders (:mod:`libai.data.build`) take one dataset or a list. A list is combined
by a ``dataset_mixer`` (concatenation by default, or a blending class taking ``(datasets,
weights)``). With ``splits`` the datasets are divided into train/valid/test parts first: built
datasets are cut into contiguous sample ranges, dataset *nodes* are built once per part as
their corpus's ``split="train"|"valid"|"test"``.
"""
import functools
from typing import Any, Callable, List, Optional, Sequence, Union

import numpy as np
from oneflow.utils.data import ConcatDataset, Dataset, Subset
from omegaconf import ListConfig

from libai.config import instantiate, is_node

__all__ = ["as_list", "build_node_parts", "mix_datasets", "split_datasets", "weighted_mixer"]

DatasetArg = Union[Dataset, Sequence[Dataset]]
ROLES = ("train", "valid", "test")
_SEQUENCES = (list, tuple, ListConfig)


def as_list(dataset: Any) -> List[Any]:
    """One dataset (or node) or a sequence of them, as a list."""
    return list(dataset) if isinstance(dataset, _SEQUENCES) else [dataset]


def mix_datasets(dataset: DatasetArg, dataset_mixer: Callable[..., Dataset], role: str) -> Dataset:
    """One dataset from one or several (``dataset_mixer`` combines several); an empty list or
    an empty result is an error naming ``role``."""
    datasets = list(dataset) if isinstance(dataset, (list, tuple)) else [dataset]
    if not datasets:
        raise ValueError(f"the {role} dataset list is empty; give at least one dataset")
    mixed = datasets[0] if len(datasets) == 1 else dataset_mixer(datasets)
    if len(mixed) == 0:
        raise ValueError(
            f"the {role} dataset is empty (0 samples); check its path and that its files hold data"
        )
    return mixed


def weighted_mixer(
    dataset_mixer: Callable[..., Dataset], weights: Optional[Sequence[float]], count: int
) -> Callable[..., Dataset]:
    """``dataset_mixer`` with ``weights`` (one per dataset) bound as its second argument.
    Concatenation cannot weight, so with it the weights must all be equal."""
    if weights is None:
        return dataset_mixer
    weights = [float(w) for w in weights]
    if len(weights) != count:
        raise ValueError(
            f"weights has {len(weights)} entries for {count} dataset(s); give one each"
        )
    if dataset_mixer is ConcatDataset:
        if len(set(weights)) > 1:
            raise ValueError(
                f"weights {weights} need a blending dataset_mixer; ConcatDataset (the default) "
                "uses every sample once, so pass dataset_mixer=<a class taking (datasets, weights)>"
            )
        return dataset_mixer
    return functools.partial(_call_with_weights, dataset_mixer, weights)


def _call_with_weights(
    mixer: Callable[..., Dataset], weights: List[float], datasets: List[Dataset]
) -> Dataset:
    return mixer(datasets, weights)


def _split_triples(splits: Sequence[Any], count: int) -> List[Any]:
    """One ``[train, valid, test]`` triple per dataset: a single triple serves them all."""
    triples = [splits] if splits and not isinstance(splits[0], _SEQUENCES) else list(splits)
    if len(triples) == 1:
        triples = triples * count
    if len(triples) != count:
        raise ValueError(f"splits has {len(triples)} triples for {count} dataset(s)")
    return triples


def split_datasets(datasets: List[Dataset], splits: Sequence[Any]) -> List[List[Dataset]]:
    """Cut each dataset into contiguous train/valid/test Subsets by proportions."""
    parts: List[List[Dataset]] = [[], [], []]
    for ds, triple in zip(datasets, _split_triples(splits, len(datasets))):
        props = np.asarray([float(x) for x in triple], dtype=np.float64)
        if props.shape != (3,) or (props < 0).any() or props.sum() <= 0:
            raise ValueError(
                "each split must be three non-negative proportions [train, valid, test], "
                f"got {triple}"
            )
        fractions = np.cumsum(np.concatenate([[0.0], props / props.sum()]))
        bounds = np.rint(fractions * len(ds)).astype(int)
        for k in range(3):
            parts[k].append(Subset(ds, list(range(bounds[k], bounds[k + 1]))))
    return parts


def build_node_parts(
    nodes: List[Any], splits: Sequence[Any], wanted: Optional[Sequence[Optional[int]]]
) -> List[List[Dataset]]:
    """Build each dataset node as the train/valid/test part of its corpus.

    Node ``i`` is instantiated with ``split=<role>`` and ``splits_string`` from its triple
    (document ratios), asking for ``wanted[k]`` samples of part ``k`` (``None``: one pass); a
    held-out part given a 0 share is not built.
    """
    triples = _split_triples(splits, len(nodes))
    wanted = list(wanted or (None, None, None))
    if len(wanted) != 3:
        raise ValueError(
            f"train_val_test_num_samples must be [train, valid, test] sample counts, got {wanted}"
        )
    parts: List[List[Dataset]] = [[], [], []]
    for node, triple in zip(nodes, triples):
        if not is_node(node):
            raise TypeError(
                "build_nlp_train_val_test_loader needs every dataset as a LazyCall node (it "
                f"builds each split itself), got a built {type(node).__name__} beside nodes"
            )
        ratios = ",".join(str(float(x)) for x in triple)
        for i, role in enumerate(ROLES):
            if i > 0 and float(triple[i]) == 0.0:
                continue  # a held-out part given no share: no loader for it
            # the split's sample count; a node that names LiBai's max_num_samples has that
            # key replaced, as LiBai's loader does
            count = ({"max_num_samples": wanted[i]}
                     if "max_num_samples" in node and wanted[i] is not None
                     else {"num_samples": wanted[i]})
            parts[i].append(instantiate(node, split=role, splits_string=ratios, **count))
    return parts
