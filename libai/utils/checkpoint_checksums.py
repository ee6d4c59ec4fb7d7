"""Content checksums of checkpoint files: computed at save, checked at load.

A checkpoint's ``manifest.json`` records every file's size (a truncated file is caught by a
``stat``); a size cannot see a flipped bit on disk or in transit. So the manifest also holds
``"checksums": {"algorithm": "xxh3_128", "files": {relative path: hex digest}}`` and loading
re-hashes every file and compares.

Why these choices:

* **xxh3_128** (the ``xxhash`` package): a non-cryptographic hash that runs at memory speed
  (several GB/s per core), so hashing costs a small fraction of writing; the goal is to catch
  storage corruption, not an adversary.
* **Hashed after the sync, by re-reading.** ``flow.save`` writes the files itself and does not
  hand us the bytes, so they are read back once the data are durable; they are still in the page
  cache then, so the memory-mapped re-read costs memory bandwidth, not disk I/O
  (``benchmarks/checkpoint_checksum_cost.py`` measures the ratio to the save time).
* **Skippable** for trusted storage: ``LIBAI_CHECKPOINT_VERIFY=0`` in the environment, or
  ``train.checkpointer.verify=False`` (passed to ``Checkpointer(verify=...)``). The environment
  wins over the configuration, so a restart can skip it without editing the config.
* Checkpoints written before checksums existed, LiBai's (no manifest) and plain ``flow.save``
  directories load as before; that their content cannot be checked is said once per process.
"""
import logging
import mmap
import os
from typing import Dict, Iterable, Optional, Tuple

import xxhash

logger = logging.getLogger(__name__)

__all__ = ["ALGORITHM", "ENV_VERIFY", "hash_file", "hash_files", "first_mismatch", "say_unchecked",
           "verify_enabled"]

ALGORITHM = "xxh3_128"
ENV_VERIFY = "LIBAI_CHECKPOINT_VERIFY"
_CHUNK = 64 << 20  # hashed per call: large enough that the per-call cost vanishes
_FALSE = {"0", "false", "no", "off"}
_TRUE = {"1", "true", "yes", "on"}
_said_unchecked = False


def hash_file(path: str) -> str:
    """The xxh3_128 hex digest of the file at ``path``.

    The file is memory-mapped and hashed straight from the page cache, in chunks of
    ``_CHUNK`` bytes (no copy into Python buffers: 3x faster than ``readinto`` here)."""
    digest = xxhash.xxh3_128()
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                view = memoryview(mapped)
                try:
                    for start in range(0, size, _CHUNK):
                        digest.update(view[start:start + _CHUNK])
                finally:
                    view.release()
    return digest.hexdigest()


def hash_files(root: str, rels: Iterable[str]) -> Dict[str, object]:
    """The manifest's ``checksums`` entry for the files ``rels`` (relative to ``root``)."""
    return {"algorithm": ALGORITHM,
            "files": {rel: hash_file(os.path.join(root, rel)) for rel in sorted(rels)}}


def first_mismatch(root: str, checksums: Optional[dict]) -> Optional[Tuple[str, str, str]]:
    """``(relative path, expected, actual)`` of the first file (sorted by path) whose content
    differs from the manifest, or ``None`` when all match. ``checksums`` is the manifest's entry;
    ``None`` (a checkpoint written before checksums) is said once per process and passes."""
    if not checksums:
        say_unchecked(root, "was written before libai recorded checksums: its file sizes are "
                            "checked, its content cannot be")
        return None
    algorithm = checksums.get("algorithm")
    if algorithm != ALGORITHM:
        raise ValueError(f"checksum algorithm {algorithm!r} is unknown to this libai "
                         f"(it knows {ALGORITHM!r}); upgrade libai")
    for rel, expected in sorted(checksums["files"].items()):
        actual = hash_file(os.path.join(root, rel))
        if actual != expected:
            return rel, expected, actual
    return None


def say_unchecked(path: str, why: str) -> None:
    """Log, once per process, that a checkpoint's content cannot be verified and why (written
    before checksums; LiBai's format or a plain ``flow.save`` directory, which have none)."""
    global _said_unchecked
    if not _said_unchecked:
        _said_unchecked = True
        logger.info("Checkpoint %s %s (said once)", path, why)


def verify_enabled(configured: Optional[bool] = None) -> bool:
    """Whether to check checksums: ``$LIBAI_CHECKPOINT_VERIFY`` if set, else ``configured``,
    else yes."""
    raw = os.environ.get(ENV_VERIFY, "").strip().lower()
    if raw in _FALSE:
        return False
    if raw in _TRUE:
        return True
    if raw:
        raise ValueError(f"{ENV_VERIFY}={os.environ[ENV_VERIFY]!r} is not a yes/no value; "
                         "use 0 (skip checksum verification, for trusted storage) or 1")
    return True if configured is None else bool(configured)
