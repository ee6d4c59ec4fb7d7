"""The on-disk format of libai checkpoints: naming, atomic publication, verification, retention.

Everything here runs on the one process that writes (rank 0) and needs no OneFlow, so the rules
of the format can be read, and tested, in one place:

* ``save_dir/<name>/`` holds one ``flow.save`` directory per part and ``manifest.json``, which
  is written *last* and records the size of every file. No manifest means "incomplete"; a file
  of another size means "corrupt".
* A checkpoint is built under ``save_dir/.tmp-<name>-<pid>`` and renamed into place; an existing
  checkpoint of the same name is first moved to ``.old-<name>-<pid>``. ``last_checkpoint`` is
  replaced with ``os.replace`` only after the rename.
* Leftovers of dead processes (``.tmp-*``/``.old-*`` whose pid no longer runs) are removed, or,
  for an ``.old-`` whose replacement never arrived, renamed back.
"""
import json
import logging
import os
import re
import shutil
import time
from typing import Any, Dict, List, Optional

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
_LEFTOVER = re.compile(r"^\.(tmp|old)-(.+)-(\d+)$")


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete, corrupt, or does not fit the model."""


def checkpoint_name(iteration: int, prefix: str = "model_") -> str:
    """The conventional name of the checkpoint taken after ``iteration`` (``model_0000999``)."""
    return f"{prefix}{int(iteration):07d}"


def finalize_checkpoint(
    tmp: str, final: str, parts: Dict[str, Any], extra_keys: List[str], world_size: int,
    tag_last: bool = True,
) -> None:
    """Publish the complete checkpoint in ``tmp`` as ``final``.

    Order is what makes it atomic: data synced, manifest written last, one rename into place,
    and only then ``last_checkpoint`` repointed (itself via a temporary file and ``os.replace``).
    """
    files = _sync_files(tmp)
    manifest = {
        "format": FORMAT, "version": VERSION, "name": os.path.basename(final),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "world_size": world_size,
        "parts": parts, "extra_keys": extra_keys, "files": files,
    }
    _write_synced(os.path.join(tmp, MANIFEST), json.dumps(manifest, indent=1))
    save_dir = os.path.dirname(final)
    old = os.path.join(save_dir, f"{OLD_PREFIX}{os.path.basename(final)}-{os.getpid()}")
    if os.path.exists(final):
        # Two renames: a crash between them leaves ``old`` complete, and the next save or
        # resume renames it back (see clean_leftovers).
        os.rename(final, old)
    os.rename(tmp, final)
    _fsync_dir(save_dir)
    shutil.rmtree(old, ignore_errors=True)
    if tag_last:
        pointer = os.path.join(save_dir, f"{TMP_PREFIX}{LAST_CHECKPOINT}-{os.getpid()}")
        _write_synced(pointer, os.path.basename(final))
        os.replace(pointer, os.path.join(save_dir, LAST_CHECKPOINT))
        _fsync_dir(save_dir)


def read_last_checkpoint(save_dir: str) -> str:
    """The name written in ``save_dir/last_checkpoint``, or ``""`` when there is none."""
    try:
        with open(os.path.join(save_dir, LAST_CHECKPOINT)) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


def list_checkpoints(save_dir: str) -> List[str]:
    """Names of the complete checkpoints in ``save_dir`` (those with a manifest), sorted."""
    if not os.path.isdir(save_dir):
        return []
    return sorted(
        n for n in os.listdir(save_dir)
        if not n.startswith(".") and os.path.isfile(os.path.join(save_dir, n, MANIFEST))
    )


def verify_checkpoint(path: str) -> Dict[str, Any]:
    """Return the manifest of a complete checkpoint at ``path``, or raise a clear error."""
    if not os.path.exists(path):
        raise CheckpointError(f"no checkpoint at {path}: it does not exist")
    if not os.path.isdir(path):
        raise CheckpointError(f"{path} is a file; expected a checkpoint directory written by "
                              "Checkpointer.save")
    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.isfile(manifest_path):
        raise CheckpointError(_why_not_a_checkpoint(path))
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
    return manifest


def _why_not_a_checkpoint(path: str) -> str:
    if os.path.basename(os.path.normpath(path)).startswith((TMP_PREFIX, OLD_PREFIX)):
        return (f"{path} is an incomplete checkpoint: a save was interrupted before it finished "
                "(no manifest.json). Load a complete one (get_all_checkpoint_files()).")
    if os.path.isfile(os.path.join(path, LAST_CHECKPOINT)):
        return (f"{path} is a save_dir, not a checkpoint: pass one of the checkpoint "
                "directories inside it, or use resume_or_load(..., resume=True)")
    if os.path.isfile(os.path.join(path, "pickled_data")):
        return (f"{path} is a plain flow.save directory, not a libai checkpoint: load it with "
                "Checkpointer.load_weights_only()")
    return (f"{path} is incomplete or not a libai checkpoint: it has no {MANIFEST}, which "
            "Checkpointer.save writes last. A save was probably interrupted; load an earlier "
            "checkpoint (Checkpointer.get_all_checkpoint_files()).")


def weights_kind(path: str) -> str:
    """``"checkpoint"`` for a libai checkpoint, ``"state_dict"`` for a plain ``flow.save``
    directory; anything else raises the reason it is neither."""
    plain = os.path.isfile(os.path.join(path, "pickled_data"))
    if plain and not os.path.isfile(os.path.join(path, MANIFEST)):
        return "state_dict"
    verify_checkpoint(path)  # raises the precise reason when it is not a checkpoint either
    return "checkpoint"


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
    """fsync every file under ``root``; return their sizes by relative path."""
    files = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = os.path.join(dirpath, name)
            fd = os.open(full, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            files[os.path.relpath(full, root)] = os.path.getsize(full)
    return files


def _write_synced(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: str) -> None:
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
