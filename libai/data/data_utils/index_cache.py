"""Build sample indices once, save them as ``.npy`` beside the data, reuse them afterwards.

Index building (shuffles and sample boundaries over millions of documents) costs seconds to
minutes; every rank of every later run needs the same arrays. So rank 0 builds and saves them
while the other ranks wait at a barrier, and everyone then memory-maps the files. The file
names carry a hash of everything the arrays depend on (corpus sizes, split, seed, lengths), so a
change of any of them builds a new set instead of silently reusing a stale one.
"""
import hashlib
import json
import logging
import os
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from libai.utils import distributed as dist

logger = logging.getLogger(__name__)

__all__ = ["CacheResult", "cache_stem", "default_cache_dir", "fingerprint", "load_or_build_indices"]

# Bump when the way any index is built changes, so old caches are not reused.
INDEX_FORMAT_VERSION = 1


def fingerprint(**params: Any) -> str:
    """A short stable hash of ``params`` (numpy arrays are hashed by content)."""
    digest = hashlib.sha1()
    for key in sorted(params):
        value = params[key]
        digest.update(key.encode())
        if isinstance(value, np.ndarray):
            digest.update(str(value.dtype).encode())
            digest.update(np.ascontiguousarray(value).tobytes())
        else:
            digest.update(json.dumps(value, sort_keys=True, default=str).encode())
    digest.update(str(INDEX_FORMAT_VERSION).encode())
    return digest.hexdigest()[:16]


class CacheResult:
    """Arrays by name, whether they came from files written earlier, and where they live."""

    def __init__(self, arrays: Dict[str, np.ndarray], hit: bool, paths: Dict[str, str]) -> None:
        self.arrays, self.hit, self.paths = arrays, hit, paths


def _save_atomically(path: str, array: np.ndarray) -> None:
    tmp = f"{path}.{os.getpid()}.tmp.npy"
    np.save(tmp, array)
    os.replace(tmp, path)


def _check_writable(cache_dir: str) -> None:
    try:
        os.makedirs(cache_dir, exist_ok=True)
    except OSError as exc:
        raise PermissionError(
            f"cannot create the index cache directory {cache_dir} ({exc.strerror}); pass "
            "cache_dir=<a writable directory> to the dataset"
        ) from None
    if not os.access(cache_dir, os.W_OK):
        raise PermissionError(
            f"index cache directory {cache_dir} is not writable (read-only data directory?); "
            "pass cache_dir=<a writable directory> to the dataset"
        )


def load_or_build_indices(
    cache_dir: str, stem: str, names: Sequence[str], build: Callable[[], Dict[str, np.ndarray]],
    rank: Optional[int] = None,
) -> CacheResult:
    """The arrays ``names`` of ``{cache_dir}/{stem}_{name}.npy``, built by ``build`` if absent.

    Every rank must call this (it contains a barrier). Rank 0 builds and writes; the others read
    after the barrier. A rank that still finds no files (a node-local cache directory on a
    multi-node run) builds the same arrays in memory: building is deterministic.
    """
    rank = dist.get_rank() if rank is None else rank
    paths = {name: os.path.join(cache_dir, f"{stem}_{name}.npy") for name in names}
    existed = all(os.path.isfile(p) for p in paths.values())
    if rank == 0 and not existed:
        try:
            _build_and_save(cache_dir, stem, names, paths, build)
        except BaseException:
            # Release the waiting ranks: finding no files, they build too and meet the same error.
            dist.synchronize()
            raise
    dist.synchronize()
    if all(os.path.isfile(p) for p in paths.values()):
        arrays = {name: np.load(paths[name], mmap_mode="r", allow_pickle=False) for name in names}
        return CacheResult(arrays, existed, paths)
    arrays = build()
    logger.warning(
        "rank %d sees no index cache in %s after rank 0 built it (not a shared file system?); "
        "built it in memory", rank, cache_dir,
    )
    return CacheResult(arrays, False, {})


def _build_and_save(
    cache_dir: str, stem: str, names: Sequence[str], paths: Dict[str, str],
    build: Callable[[], Dict[str, np.ndarray]],
) -> None:
    _check_writable(cache_dir)
    arrays = build()
    missing = set(names) - set(arrays)
    if missing:
        raise KeyError(f"index builder did not return {sorted(missing)}")
    for name in names:
        _save_atomically(paths[name], arrays[name])
    logger.info("built and cached sample indices %s_* in %s", stem, cache_dir)


def default_cache_dir(data_prefix: str, cache_dir: Optional[str]) -> str:
    """``cache_dir`` if given, else the directory holding the data files."""
    if cache_dir:
        return cache_dir
    return os.path.dirname(os.path.abspath(data_prefix))


def cache_stem(data_prefix: str, kind: str, split: str, key: str) -> str:
    return f"{os.path.basename(data_prefix)}_{kind}_{split}_{key}"

