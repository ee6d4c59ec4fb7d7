"""Checkpoint integrity: every file's content checksum in the manifest, verified on load,
``load_weights_only`` (train.load_weight, the loaders) and ``--resume``, which falls back to the
newest checkpoint that verifies. Old checkpoints (no checksums) still load, said once."""
import json
import logging
import os
import re
import shutil

import numpy as np
import oneflow as flow
import pytest
import xxhash

from libai.utils import checkpoint_checksums
from libai.utils.checkpoint import Checkpointer, CheckpointError
from libai.utils.weight_readers import load_weight

HERE = os.path.dirname(os.path.abspath(__file__))
OLD_FIXTURE = os.path.join(HERE, "fixtures", "checkpoint_v1", "model_0000003")


def _net(seed):
    flow.manual_seed(seed)
    return flow.nn.Sequential(flow.nn.Linear(4, 6), flow.nn.ReLU(), flow.nn.Linear(6, 3))


def _values(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def _flip_byte(path):
    """Flip one bit in the middle of the model part's largest tensor file; return its name."""
    files = [os.path.join(r, n) for r, _, ns in os.walk(os.path.join(path, "model")) for n in ns
             if n not in ("pickled_data", "meta")]
    target = max(files, key=os.path.getsize)
    with open(target, "r+b") as f:
        f.seek(os.path.getsize(target) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x10]))
    return os.path.relpath(target, path)


@pytest.fixture
def two_saves(tmp_path, monkeypatch):
    """A save_dir with model_0000001 (weights of seed 1) and model_0000002 (seed 2, newest)."""
    monkeypatch.delenv(checkpoint_checksums.ENV_VERIFY, raising=False)
    save_dir = str(tmp_path / "out")
    first = _net(1)
    Checkpointer(first, save_dir).save("model_0000001", iteration=1)
    second = _net(2)
    for p_new, p_old in zip(second.parameters(), first.parameters()):
        p_old.data.copy_(p_new.data)  # same module object, new values: one Checkpointer's view
    Checkpointer(first, save_dir).save("model_0000002", iteration=2)
    return save_dir, _values(_net(1)), _values(_net(2))


def test_manifest_holds_the_xxh3_128_of_every_file(two_saves):
    save_dir, _, _ = two_saves
    path = os.path.join(save_dir, "model_0000002")
    with open(os.path.join(path, "manifest.json")) as f:
        manifest = json.load(f)
    sums = manifest["checksums"]
    assert sums["algorithm"] == "xxh3_128"
    assert set(sums["files"]) == set(manifest["files"]) and len(sums["files"]) > 4
    for rel, digest in sums["files"].items():
        with open(os.path.join(path, rel), "rb") as f:
            assert xxhash.xxh3_128(f.read()).hexdigest() == digest, rel


def test_flipped_byte_resume_falls_back_and_load_weight_refuses(two_saves, caplog):
    save_dir, values_1, values_2 = two_saves
    bad = os.path.join(save_dir, "model_0000002")
    rel = _flip_byte(bad)
    model = _net(7)
    with pytest.raises(CheckpointError, match=re.escape(f"{bad} is corrupt: the content of {rel} changed")):
        load_weight(model, bad, Checkpointer(model, save_to_disk=False))
    with pytest.raises(CheckpointError, match=re.escape(rel)):
        Checkpointer(model).load(bad)
    with caplog.at_level(logging.WARNING, logger="libai.utils.checkpoint"):
        extra = Checkpointer(model, save_dir).resume_or_load(None, resume=True)
    assert extra == {"iteration": 1}
    for key, value in _values(model).items():
        np.testing.assert_array_equal(value, values_1[key], err_msg=key)
    warnings = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert rel in warnings and "model_0000001, the newest checkpoint that verifies" in warnings
    # never deleted: set aside under a name no later save or retention touches
    aside = [n for n in os.listdir(save_dir) if n.startswith("model_0000002.corrupt-")]
    assert len(aside) == 1 and rel in json.load(open(os.path.join(save_dir, aside[0], "manifest.json")))["files"]
    with open(os.path.join(save_dir, "last_checkpoint")) as f:
        assert f.read().strip() == "model_0000002"  # repointed only by the next save


def test_skip_flag_and_env_override(two_saves, monkeypatch):
    save_dir, _, values_2 = two_saves
    bad = os.path.join(save_dir, "model_0000002")
    _flip_byte(bad)
    model = _net(7)
    Checkpointer(model, verify=False).load_weights_only(bad)  # trusted storage: not hashed
    monkeypatch.setenv(checkpoint_checksums.ENV_VERIFY, "0")
    Checkpointer(model, verify=True).load(bad)  # the environment wins over the configuration
    monkeypatch.setenv(checkpoint_checksums.ENV_VERIFY, "1")
    with pytest.raises(CheckpointError, match="changed since it was saved"):
        Checkpointer(model, verify=False).load(bad)
    monkeypatch.setenv(checkpoint_checksums.ENV_VERIFY, "maybe")
    with pytest.raises(ValueError, match="LIBAI_CHECKPOINT_VERIFY='maybe' is not a yes/no"):
        Checkpointer(model).load(bad)


def test_no_checkpoint_verifies_is_an_error_naming_each(two_saves):
    save_dir, _, _ = two_saves
    for name in ("model_0000001", "model_0000002"):
        _flip_byte(os.path.join(save_dir, name))
    with pytest.raises(CheckpointError, match="no checkpoint in .* verifies .*model_0000002, model_0000001"):
        Checkpointer(_net(7), save_dir).resume_or_load(None, resume=True)


def test_old_checkpoint_without_checksums_loads_with_one_message(tmp_path, caplog, monkeypatch):
    monkeypatch.delenv(checkpoint_checksums.ENV_VERIFY, raising=False)
    monkeypatch.setattr(checkpoint_checksums, "_said_unchecked", False)
    copies = [str(tmp_path / f"old{i}") for i in range(2)]
    for copy in copies:
        shutil.copytree(OLD_FIXTURE, copy)
    with open(os.path.join(OLD_FIXTURE, "manifest.json")) as f:
        assert "checksums" not in json.load(f)
    state = flow.load(os.path.join(OLD_FIXTURE, "model"))
    with caplog.at_level(logging.INFO, logger="libai.utils.checkpoint_checksums"):
        for copy in copies:
            model = flow.nn.Module()
            model.encoder = flow.nn.Linear(4, 2)
            model.head = flow.nn.Linear(2, 3)
            Checkpointer(model).load_weights_only(copy)
            for key, value in model.state_dict().items():
                np.testing.assert_array_equal(value.numpy(), state[key].numpy(), err_msg=key)
    said = [r.getMessage() for r in caplog.records if "before libai recorded checksums" in r.getMessage()]
    assert len(said) == 1 and copies[0] in said[0]


def test_a_plain_flow_save_directory_loads_saying_it_has_no_checksums(tmp_path, caplog, monkeypatch):
    monkeypatch.delenv(checkpoint_checksums.ENV_VERIFY, raising=False)
    monkeypatch.setattr(checkpoint_checksums, "_said_unchecked", False)
    source = _net(3)
    flow.save(source.state_dict(), str(tmp_path / "weights"))
    model = _net(4)
    with caplog.at_level(logging.INFO, logger="libai.utils.checkpoint_checksums"):
        Checkpointer(model).load_weights_only(str(tmp_path / "weights"))
    for key, value in _values(model).items():
        np.testing.assert_array_equal(value, _values(source)[key], err_msg=key)
    assert any("a plain flow.save directory (one state dict), which records no checksums" in r.getMessage()
               for r in caplog.records)
