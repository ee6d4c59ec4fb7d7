"""Checkpoint integrity: every file's xxh3-64 checksum in the manifest, verified on load, on
``train.load_weight`` and on resume (which falls back to the newest checkpoint that verifies)."""
import json
import logging
import os

import numpy as np
import oneflow as flow
import pytest

from libai.utils import checkpoint_files
from libai.utils.checkpoint import Checkpointer, CheckpointError
from libai.utils.checkpoint_files import MANIFEST, file_checksum, verify_checkpoint


def _net(seed):
    flow.manual_seed(seed)
    return flow.nn.Sequential(flow.nn.Linear(4, 8), flow.nn.Linear(8, 3))


def _weights(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def _flip_a_byte(checkpoint):
    """Change one byte in the middle of the largest weight file, keeping its size."""
    files = []
    for folder, _, names in os.walk(os.path.join(checkpoint, "model")):
        files += [os.path.join(folder, n) for n in names if n != "pickled_data"]
    target = max(files, key=os.path.getsize)
    with open(target, "r+b") as f:
        f.seek(os.path.getsize(target) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x40]))
    return os.path.relpath(target, checkpoint)


@pytest.fixture
def saved(tmp_path):
    """Two checkpoints of different weights; ``last_checkpoint`` names the second."""
    first, second = _net(1), _net(2)
    Checkpointer(first, str(tmp_path)).save("model_0000001", iteration=1)
    Checkpointer(second, str(tmp_path)).save("model_0000002", iteration=2)
    return tmp_path, _weights(first), _weights(second)


def test_the_manifest_holds_every_files_checksum(saved):
    save_dir, _, _ = saved
    path = os.path.join(save_dir, "model_0000002")
    with open(os.path.join(path, MANIFEST)) as f:
        manifest = json.load(f)
    assert manifest["checksum"] == "xxh3_64"
    assert sorted(manifest["checksums"]) == sorted(manifest["files"])
    for rel, digest in manifest["checksums"].items():
        assert digest == file_checksum(os.path.join(path, rel))


def test_a_flipped_byte_is_named_and_the_skip_switches_trust_the_storage(saved, monkeypatch):
    save_dir, _, _ = saved
    path = os.path.join(save_dir, "model_0000002")
    verify_checkpoint(path)
    rel = _flip_a_byte(path)
    with pytest.raises(CheckpointError, match=rf"is corrupt: {rel} has checksum [0-9a-f]+, the "
                       r"manifest says [0-9a-f]+ .*LIBAI_SKIP_CHECKSUMS=1"):
        verify_checkpoint(path)
    verify_checkpoint(path, checksums=False)  # sizes still match
    monkeypatch.setenv("LIBAI_SKIP_CHECKSUMS", "1")
    verify_checkpoint(path)
    with pytest.raises(CheckpointError, match="is corrupt"):
        verify_checkpoint(path, checksums=True)  # the config's choice wins over the environment


def test_load_weight_refuses_a_corrupt_checkpoint_with_the_files_name(saved):
    save_dir, _, _ = saved
    path = os.path.join(save_dir, "model_0000002")
    rel = _flip_a_byte(path)
    model = _net(3)
    before = _weights(model)
    with pytest.raises(CheckpointError, match=rf"{rel} has checksum"):
        Checkpointer(model, save_to_disk=False).load_weights_only(path)
    assert all(np.array_equal(before[k], v) for k, v in _weights(model).items())


def test_resume_falls_back_to_the_newest_checkpoint_that_verifies(saved, caplog):
    save_dir, first, _ = saved
    newest = os.path.join(save_dir, "model_0000002")
    _flip_a_byte(newest)
    model = _net(3)
    checkpointer = Checkpointer(model, str(save_dir))
    with caplog.at_level(logging.WARNING, logger="libai"):
        extra = checkpointer.resume_or_load(None, resume=True)
    assert extra["iteration"] == 1
    assert checkpointer.loaded_path == os.path.join(str(save_dir), "model_0000001")
    assert all(np.array_equal(first[k], v) for k, v in _weights(model).items())
    warning = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "Resuming from" in warning and "model_0000002 is corrupt" in warning
    # kept for inspection under another name, out of the way of the next save of that name
    assert os.path.isdir(newest + ".corrupt") and not os.path.exists(newest)
    assert "model_0000002.corrupt" not in [os.path.basename(p)
                                           for p in checkpointer.get_all_checkpoint_files()]


def test_resume_with_no_checkpoint_that_verifies_says_so(saved):
    save_dir, _, _ = saved
    for name in ("model_0000001", "model_0000002"):
        _flip_a_byte(os.path.join(save_dir, name))
    with pytest.raises(CheckpointError, match=r"cannot resume from .*No other checkpoint there verifies"):
        Checkpointer(_net(3), str(save_dir)).resume_or_load(None, resume=True)
    assert os.path.isdir(os.path.join(save_dir, "model_0000002"))  # nothing renamed or deleted


def test_a_checkpoint_from_before_checksums_loads_and_says_so_once(saved, caplog, monkeypatch):
    save_dir, _, second = saved
    path = os.path.join(save_dir, "model_0000002")
    manifest_path = os.path.join(path, MANIFEST)
    with open(manifest_path) as f:
        manifest = json.load(f)
    del manifest["checksums"], manifest["checksum"]
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    monkeypatch.setattr(checkpoint_files, "_SAID_NO_CHECKSUMS", set())
    model = _net(3)
    with caplog.at_level(logging.WARNING, logger="libai"):
        Checkpointer(model, save_to_disk=False).load_weights_only(path)
        Checkpointer(model, save_to_disk=False).load_weights_only(path)
    said = [r for r in caplog.records if "has no checksums" in r.getMessage()]
    assert len(said) == 1
    assert all(np.array_equal(second[k], v) for k, v in _weights(model).items())
