"""The on-disk format of libai checkpoints: naming, atomic publication, verification, retention.

Everything here runs on the one process that writes (rank 0) and needs no OneFlow, so the rules
of the format can be read, and tested, in one place:

* ``save_dir/<name>/`` holds one ``flow.save`` directory per part and ``manifest.json``, which
  is written *last* and records the size and the content checksum of every file
  (:mod:`libai.utils.checkpoint_checksums`). No manifest means "incomplete"; a file of another
  size or content means "corrupt", and the error names the first such file.
* A checkpoint is built under ``save_dir/.tmp-<name>-<pid>`` and renamed into place; an existing
  checkpoint of the same name is first moved to ``.old-<name>-<pid>``. ``last_checkpoint`` is
  replaced with ``os.replace`` only after the rename.
* Leftovers of dead processes (``.tmp-*``/``.old-*`` whose pid no longer runs) are removed, or,
  for an ``.old-`` whose replacement never arrived, renamed back.
"""
import ctypes
import functools
import json
import logging
import os
import re
import shutil
import time
from typing import Any, Dict, List, Optional

from libai.utils.checkpoint_checksums import first_mismatch, hash_files

logger = logging.getLogger(__name__)

__all__ = [
    "CheckpointError",
    "checkpoint_name",
    "check_name",
    "clean_leftovers",
    "finalize_checkpoint",
    "keep_last_checkpoints",
    "list_checkpoints",
    "read_last_checkpoint",
    "resume_candidates",
    "set_aside",
    "detect_format",
    "verify_checkpoint",
    "weights_kind",
]

MANIFEST = "manifest.json"
LAST_CHECKPOINT = "last_checkpoint"
FORMAT = "libai-checkpoint"
VERSION = 1
MODEL_PART = "model"
EXTRA_PART = "extra"
TMP_PREFIX = ".tmp-"
OLD_PREFIX = ".old-"
CORRUPT = ".corrupt-"  # a checkpoint that failed verification on resume is set aside under this
_LEFTOVER = re.compile(r"^\.(tmp|old)-(.+)-(\d+)$")


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete, corrupt, or does not fit the model."""


def checkpoint_name(iteration: int, prefix: str = "model_") -> str:
    """The conventional name of the checkpoint taken after ``iteration`` (``model_0000999``)."""
    return f"{prefix}{int(iteration):07d}"


def finalize_checkpoint(
    tmp: str, final: str, parts: Dict[str, Any], extra_keys: List[str], world_size: int,
    tag_last: bool = True, info: Optional[Dict[str, Any]] = None,
) -> None:
    """Publish the complete checkpoint in ``tmp`` as ``final``.

    Order is what makes it atomic: data synced, manifest written last, one rename into place,
    and only then ``last_checkpoint`` repointed (itself via a temporary file and ``os.replace``).
    ``info`` adds descriptive keys to the manifest (what exporting to LiBai's layout needs).
    """
    files = _sync_files(tmp)
    manifest = {
        "format": FORMAT, "version": VERSION, "name": os.path.basename(final),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "world_size": world_size,
        "parts": parts, "extra_keys": extra_keys, "files": files,
        # hashed after the sync: flow.save does not hand us the bytes, the page cache still has them
        "checksums": hash_files(tmp, files),
    }
    # descriptive additions (model class, optimizer parameter names) never replace the above
    manifest.update({k: v for k, v in (info or {}).items() if k not in manifest})
    _write_synced(os.path.join(tmp, MANIFEST), json.dumps(manifest, indent=1))
    save_dir = os.path.dirname(final)
    old = os.path.join(save_dir, f"{OLD_PREFIX}{os.path.basename(final)}-{os.getpid()}")
    if os.path.exists(final):
        # Two renames: a crash between them leaves ``old`` complete, and the next save or
        # resume renames it back (see clean_leftovers).
        os.rename(final, old)
    os.rename(tmp, final)
    _fsync_path(save_dir)
    shutil.rmtree(old, ignore_errors=True)
    if tag_last:
        pointer = os.path.join(save_dir, f"{TMP_PREFIX}{LAST_CHECKPOINT}-{os.getpid()}")
        _write_synced(pointer, os.path.basename(final))
        os.replace(pointer, os.path.join(save_dir, LAST_CHECKPOINT))
        _fsync_path(save_dir)


def read_last_checkpoint(save_dir: str) -> str:
    """The name written in ``save_dir/last_checkpoint``, or ``""`` when there is none."""
    try:
        with open(os.path.join(save_dir, LAST_CHECKPOINT)) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


def list_checkpoints(save_dir: str) -> List[str]:
    """Names of the complete checkpoints in ``save_dir``, sorted: ours (with a manifest) and
    complete ones written by LiBai's Checkpointer."""
    if not os.path.isdir(save_dir):
        return []
    names = []
    for name in os.listdir(save_dir):
        full = os.path.join(save_dir, name)
        if name.startswith(".") or not os.path.isdir(full):
            continue
        if os.path.isfile(os.path.join(full, MANIFEST)):
            names.append(name)
            continue
        try:
            if detect_format(full) == LIBAI_UPSTREAM:
                names.append(name)
        except CheckpointError:
            pass
    return sorted(names)


def set_aside(save_dir: str, name: str) -> str:
    """Rename the checkpoint ``name``, which failed verification, to ``<name>.corrupt-<time>``
    so that a later save under the same name cannot replace it (it is evidence, never deleted)
    and retention and resume skip it; return the new name."""
    new = f"{name}{CORRUPT}{time.strftime('%Y%m%d-%H%M%S')}"
    os.rename(os.path.join(save_dir, name), os.path.join(save_dir, new))
    _fsync_path(save_dir)
    return new


def resume_candidates(save_dir: str) -> List[str]:
    """Names to resume from, in order of preference: the one ``last_checkpoint`` names, then
    every other complete checkpoint, newest first (by the time its manifest, or for LiBai's
    layout its directory, was written). ``--resume`` takes the first that verifies."""
    last = read_last_checkpoint(save_dir)

    def written(name: str) -> float:
        full = os.path.join(save_dir, name)
        marker = os.path.join(full, MANIFEST)
        return os.path.getmtime(marker if os.path.isfile(marker) else full)

    others = sorted((n for n in list_checkpoints(save_dir) if n != last and CORRUPT not in n),
                    key=written, reverse=True)
    return ([last] if last else []) + others


# The formats a directory can be in, as detect_format names them.
LIBAI = "libai"                    # ours: parts + manifest.json
LIBAI_UPSTREAM = "libai-upstream"  # LiBai's Checkpointer: one flow.save directory per part
STATE_DICT = "state_dict"          # a single flow.save directory (model weights alone)
FORMAT_NAMES = {
    LIBAI: "a libai checkpoint (parts and manifest.json)",
    LIBAI_UPSTREAM: "a LiBai Checkpointer checkpoint (one flow.save directory per part, no manifest.json)",
    STATE_DICT: "a plain flow.save directory (one state dict)",
}
PICKLED = "pickled_data"  # the file every flow.save directory holds
# Parts only libai's Checkpointer writes: a directory holding one of them without a manifest is
# one of our saves that did not finish, never a LiBai checkpoint (LiBai skips ``iteration`` and
# writes no ``extra``).
_OURS_ONLY = (EXTRA_PART,)


def detect_format(path: str) -> str:
    """Which checkpoint format the directory ``path`` is in: :data:`LIBAI`,
    :data:`LIBAI_UPSTREAM` or :data:`STATE_DICT`.

    Anything else raises :class:`CheckpointError` with the reason, told apart by what is on
    disk: a missing path, a file, a ``save_dir``, one of our saves interrupted before its
    manifest, a LiBai checkpoint with an unfinished part, an empty or unrelated directory.
    """
    if not os.path.exists(path):
        raise CheckpointError(f"no checkpoint at {path}: it does not exist")
    if not os.path.isdir(path):
        raise CheckpointError(f"{path} is a file; expected a checkpoint directory written by "
                              "Checkpointer.save")
    if os.path.isfile(os.path.join(path, MANIFEST)):
        return LIBAI
    if os.path.isfile(os.path.join(path, PICKLED)):
        return STATE_DICT
    base = os.path.basename(os.path.normpath(path))
    entries = sorted(e for e in os.listdir(path) if not e.startswith("."))
    if base.startswith((TMP_PREFIX, OLD_PREFIX)) or any(e in _OURS_ONLY for e in entries):
        raise CheckpointError(
            f"{path} is an incomplete libai checkpoint: a save was interrupted before it finished "
            f"(it has libai's parts but no {MANIFEST}, which is written last). Load a complete "
            "one (Checkpointer.get_all_checkpoint_files())."
        )
    if LAST_CHECKPOINT in entries:
        last = read_last_checkpoint(path)
        raise CheckpointError(
            f"{path} is a save_dir, not a checkpoint (its last_checkpoint names {last!r}): pass "
            "one of the checkpoint directories inside it, or use resume_or_load(..., resume=True)"
        )
    parts = [e for e in entries if os.path.isdir(os.path.join(path, e))]
    if parts and len(parts) == len(entries):
        unfinished = [p for p in parts if not os.path.isfile(os.path.join(path, p, PICKLED))]
        finished = [p for p in parts if p not in unfinished]
        if MODEL_PART in finished and not unfinished:
            return LIBAI_UPSTREAM
        if finished or MODEL_PART in parts:
            seen = FORMAT_NAMES[LIBAI_UPSTREAM]
            if unfinished:
                raise CheckpointError(
                    f"{path} looks like {seen}, but its part(s) {unfinished} have no "
                    f"{PICKLED}: LiBai's save of them did not finish. Load an earlier checkpoint."
                )
            raise CheckpointError(
                f"{path} looks like {seen} (parts {finished}), but it has no {MODEL_PART!r} "
                "part, so there are no weights to load"
            )
    if not entries:
        raise CheckpointError(
            f"{path} is an empty directory, not a libai checkpoint nor a LiBai one: it has no "
            f"{MANIFEST} and no flow.save parts"
        )
    raise CheckpointError(
        f"{path} is not a libai checkpoint (no {MANIFEST}), nor a LiBai Checkpointer one (no "
        f"{MODEL_PART}/{PICKLED}), nor a flow.save directory (no {PICKLED}); it holds "
        f"{entries[:8]}"
    )


def verify_checkpoint(path: str, checksums: bool = True) -> Dict[str, Any]:
    """Return the manifest of a complete libai checkpoint at ``path``, or raise a clear error
    (which also names the format found when ``path`` is in another one, or the first file whose
    size or, with ``checksums``, content differs from the manifest)."""
    kind = detect_format(path)
    if kind == STATE_DICT:
        raise CheckpointError(
            f"{path} is {FORMAT_NAMES[STATE_DICT]}, not a libai checkpoint: load it with "
            "Checkpointer.load_weights_only()"
        )
    if kind == LIBAI_UPSTREAM:
        raise CheckpointError(
            f"{path} is {FORMAT_NAMES[LIBAI_UPSTREAM]}, not a libai checkpoint: it has no "
            f"{MANIFEST} to verify; Checkpointer.load reads it"
        )
    manifest_path = os.path.join(path, MANIFEST)
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
        if manifest.get("format") != FORMAT:
            raise ValueError(f"format is {manifest.get('format')!r}, not {FORMAT!r}")
        if int(manifest.get("version", 0)) > VERSION:
            raise ValueError(f"format version {manifest['version']} is newer than this libai "
                             f"reads ({VERSION}); upgrade libai")
        files, parts = dict(manifest["files"]), dict(manifest["parts"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"checkpoint {path} is corrupt: unreadable {MANIFEST} ({exc})")
    for rel, size in sorted(files.items()):
        full = os.path.join(path, rel)
        actual = os.path.getsize(full) if os.path.isfile(full) else None
        if actual != size:
            state = "is missing" if actual is None else f"has {actual} bytes"
            raise CheckpointError(
                f"checkpoint {path} is corrupt: {rel} {state}, the manifest says {size} bytes. "
                "Load an earlier checkpoint (Checkpointer.get_all_checkpoint_files())."
            )
    if MODEL_PART not in parts:
        raise CheckpointError(f"checkpoint {path} is corrupt: it has no {MODEL_PART!r} part")
    if checksums:
        try:
            bad = first_mismatch(path, manifest.get("checksums"))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CheckpointError(f"checkpoint {path} is corrupt: unreadable checksums in "
                                  f"{MANIFEST} ({exc})") from exc
        if bad:
            rel, expected, actual = bad
            raise CheckpointError(
                f"checkpoint {path} is corrupt: the content of {rel} changed since it was saved "
                f"(checksum {actual}, the manifest says {expected}). Load an earlier checkpoint "
                "(Checkpointer.get_all_checkpoint_files()); the file is left as it is."
            )
    return manifest


def weights_kind(path: str, checksums: bool = True) -> str:
    """Where the model weights of ``path`` are: ``"checkpoint"`` (a libai checkpoint, verified),
    ``"libai-upstream"`` (LiBai's layout: ``path/model``) or ``"state_dict"`` (``path`` itself);
    anything else raises the reason it is none of them."""
    kind = detect_format(path)
    if kind == LIBAI:
        verify_checkpoint(path, checksums)
        return "checkpoint"
    return kind


def keep_last_checkpoints(
    save_dir: str, max_to_keep: Optional[int], prefix: str = "model_"
) -> List[str]:
    """Delete all but the newest ``max_to_keep`` ``<prefix><digits>`` checkpoints in ``save_dir``.

    The one ``last_checkpoint`` names is always kept, as is every other name. Each deletion is
    a rename to a temporary name first, so an interrupted deletion never leaves a half
    checkpoint under a real name. Returns the names deleted, oldest first. ``None`` keeps all.
    """
    if max_to_keep is None:
        return []
    if int(max_to_keep) < 1:
        raise ValueError(f"max_to_keep must be >= 1, got {max_to_keep}; use None to keep all")
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+)$")
    numbered = sorted(
        (int(m.group(1)), n) for n in os.listdir(save_dir) if (m := pattern.match(n))
        and os.path.isdir(os.path.join(save_dir, n))
    )
    protected = read_last_checkpoint(save_dir)
    doomed = [n for _, n in numbered[: max(0, len(numbered) - int(max_to_keep))] if n != protected]
    for name in doomed:
        trash = os.path.join(save_dir, f"{TMP_PREFIX}{name}-{os.getpid()}")
        os.rename(os.path.join(save_dir, name), trash)
        shutil.rmtree(trash, ignore_errors=True)
    if doomed:
        logger.info("Deleted old checkpoints: %s", ", ".join(doomed))
    return doomed


def clean_leftovers(save_dir: str) -> None:
    """Remove temporary directories of dead saves; restore a checkpoint caught mid-replace."""
    for entry in os.listdir(save_dir):
        match = _LEFTOVER.match(entry)
        if not match or _pid_alive(int(match.group(3))):
            continue
        kind, name, full = match.group(1), match.group(2), os.path.join(save_dir, entry)
        target = os.path.join(save_dir, name)
        if kind == "old" and not os.path.exists(target):
            os.rename(full, target)
            logger.warning("Restored %s, which an interrupted save was replacing", target)
        elif os.path.isdir(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            os.remove(full)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # our own leftovers are never in use at the start of a save
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sync_files(root: str) -> Dict[str, int]:
    """Make every file under ``root`` durable; return their sizes by relative path.

    One ``syncfs(2)`` of the filesystem holding ``root`` where the C library has it (Linux)
    instead of an fsync per file: OneFlow's format is a directory per tensor, so a checkpoint is
    thousands of small files, and each fsync forces a journal commit of its own (3,000 small
    files on ext4: 0.9 s of fsyncs against 0.08 s for one syncfs). syncfs also makes the new
    directories' entries durable. Elsewhere, or when it reports an error, every file and
    directory is fsynced (an I/O error then raises)."""
    files = {}
    folders = [root]
    for dirpath, dirnames, names in os.walk(root):
        folders += [os.path.join(dirpath, d) for d in dirnames]
        for name in names:
            full = os.path.join(dirpath, name)
            files[os.path.relpath(full, root)] = os.path.getsize(full)
    if not _syncfs(root):
        for path in [os.path.join(root, f) for f in files] + folders:
            _fsync_path(path)
    return files


def _syncfs(path: str) -> bool:
    """``syncfs(2)`` on the filesystem of ``path``; False when unavailable or it failed."""
    syncfs = getattr(_libc(), "syncfs", None)
    if syncfs is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return syncfs(fd) == 0
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    """The process's C library (``None`` where ctypes cannot open it)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _write_synced(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _fsync_path(path: str) -> None:
    """fsync a file or a directory (a directory's fsync makes its entries durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_name(name: str, what: str) -> None:
    """Refuse names that would escape ``save_dir`` or collide with the format's own files."""
    if not name or os.sep in name or name.startswith(".") or name == LAST_CHECKPOINT:
        raise ValueError(f"invalid {what} {name!r}: use a plain name such as 'model_0000999' "
                         f"(no '{os.sep}', no leading '.', not {LAST_CHECKPOINT!r})")
