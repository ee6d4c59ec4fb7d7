"""Tests of libai.utils.checkpoint in one process: round trips, atomicity, errors, retention.

Random-state and cross-layout (two-process) tests are in test_checkpoint_layouts.py."""
import logging
import os
import re
import subprocess
import sys

import numpy as np
import oneflow as flow
import pytest

from libai.utils.checkpoint import (
    Checkpointer,
    CheckpointError,
    checkpoint_name,
)

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------
# Small building blocks
# ---------------------------------------------------------------------------------------------
class Counter:
    """A custom checkpointable: anything with state_dict/load_state_dict."""

    def __init__(self, value=0):
        self.value = value

    def state_dict(self):
        return {"value": self.value, "history": [self.value] * 2}

    def load_state_dict(self, state):
        self.value = state["value"]


class Net(flow.nn.Module):
    def __init__(self, hidden=8, head="head"):
        super().__init__()
        self.encoder = flow.nn.Linear(4, hidden)
        setattr(self, head, flow.nn.Linear(hidden, 3))
        self._head = head

    def forward(self, x):
        return getattr(self, self._head)(flow.relu(self.encoder(x)))


def make_run(seed):
    flow.manual_seed(seed)
    model = Net()
    optimizer = flow.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.01)
    scheduler = flow.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    return model, optimizer, scheduler, Counter()


def train_step(model, optimizer, scheduler, seed):
    x = flow.tensor(np.random.RandomState(seed).randn(5, 4).astype(np.float32))
    optimizer.zero_grad()
    (model(x) ** 2).mean().backward()
    optimizer.step()
    scheduler.step()


def params(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def assert_same_params(a, b):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def optimizer_tensors(optimizer):
    state = optimizer.state_dict()["state"]
    return {
        (idx, name): value.numpy().copy()
        for idx, slots in state.items() if isinstance(slots, dict)
        for name, value in slots.items()
    }


def read_last(save_dir):
    with open(os.path.join(save_dir, "last_checkpoint")) as f:
        return f.read().strip()


def visible_entries(save_dir):
    return sorted(os.listdir(save_dir))


# ---------------------------------------------------------------------------------------------
# Round trip
# ---------------------------------------------------------------------------------------------
def test_round_trip_restores_every_part_and_the_next_step(tmp_path):
    model, optimizer, scheduler, counter = make_run(seed=0)
    for i in range(3):
        train_step(model, optimizer, scheduler, seed=i)
    counter.value = 42
    saver = Checkpointer(model, str(tmp_path), optimizer=optimizer, scheduler=scheduler,
                         counter=counter)
    path = saver.save(checkpoint_name(2), iteration=2)

    model2, optimizer2, scheduler2, counter2 = make_run(seed=1)
    before = params(model2)
    assert not np.array_equal(before["encoder.weight"], params(model)["encoder.weight"])
    loader = Checkpointer(model2, str(tmp_path), optimizer=optimizer2, scheduler=scheduler2,
                          counter=counter2)
    assert loader.load(path) == {"iteration": 2}

    assert_same_params(params(model), params(model2))
    expected_slots = optimizer_tensors(optimizer)
    restored_slots = optimizer_tensors(optimizer2)
    assert expected_slots.keys() == restored_slots.keys() and len(expected_slots) == 8
    for key in expected_slots:
        np.testing.assert_array_equal(expected_slots[key], restored_slots[key], err_msg=str(key))
    assert optimizer2.state_dict()["state"]["step"] == optimizer.state_dict()["state"]["step"]
    assert scheduler2.state_dict() == scheduler.state_dict()
    assert counter2.value == 42
    assert loader.last_load_report.loaded_parts == ["model", "optimizer", "scheduler", "counter"]

    train_step(model, optimizer, scheduler, seed=10)
    train_step(model2, optimizer2, scheduler2, seed=10)
    assert_same_params(params(model), params(model2))
    assert scheduler2.get_last_lr() == scheduler.get_last_lr()


def test_layout_on_disk_lets_the_model_part_be_read_alone(tmp_path):
    model, optimizer, scheduler, counter = make_run(seed=0)
    saver = Checkpointer(model, str(tmp_path), optimizer=optimizer, counter=counter)
    path = saver.save("model_0000007", iteration=7)
    assert path == os.path.join(str(tmp_path), "model_0000007")
    assert visible_entries(tmp_path) == ["last_checkpoint", "model_0000007"]
    assert read_last(tmp_path) == "model_0000007"
    assert sorted(os.listdir(path)) == ["counter", "extra", "manifest.json", "model", "optimizer"]
    weights = flow.load(os.path.join(path, "model"))
    assert_same_params(params(model), {k: v.numpy() for k, v in weights.items()})
    assert flow.load(os.path.join(path, "extra")) == {"iteration": 7}


def test_load_selected_checkpointables_only(tmp_path):
    model, optimizer, scheduler, counter = make_run(seed=0)
    train_step(model, optimizer, scheduler, seed=0)
    counter.value = 5
    path = Checkpointer(model, str(tmp_path), optimizer=optimizer, scheduler=scheduler,
                        counter=counter).save("model_0000000")

    model2, optimizer2, scheduler2, counter2 = make_run(seed=1)
    loader = Checkpointer(model2, str(tmp_path), optimizer=optimizer2, scheduler=scheduler2,
                          counter=counter2)
    assert loader.load(path, checkpointables=["counter"]) == {}
    assert counter2.value == 5
    assert scheduler2.state_dict()["last_step"] == 0
    assert optimizer_tensors(optimizer2) == {}
    assert loader.last_load_report.skipped_parts == ["optimizer", "scheduler"]
    with pytest.raises(KeyError, match="no checkpointable named 'sampler'"):
        loader.load(path, checkpointables=["sampler"])


def test_part_for_an_unregistered_checkpointable_is_logged_not_fatal(tmp_path, caplog):
    model, _, _, counter = make_run(seed=0)
    counter.value = 3
    path = Checkpointer(model, str(tmp_path), counter=counter).save("model_final")

    model2, _, _, _ = make_run(seed=1)
    newcomer = Counter(value=-1)
    loader = Checkpointer(model2, str(tmp_path), sampler=newcomer)
    with caplog.at_level(logging.INFO, logger="libai.utils.checkpoint"):
        loader.load(path)
    assert_same_params(params(model), params(model2))
    assert loader.last_load_report.skipped_parts == ["counter"]
    assert loader.last_load_report.absent_parts == ["sampler"]
    assert newcomer.value == -1
    assert "Not loaded from" in caplog.text and "counter" in caplog.text
    assert "no state for sampler" in caplog.text


# ---------------------------------------------------------------------------------------------
# Atomicity
# ---------------------------------------------------------------------------------------------
class Bomb:
    armed = False

    def state_dict(self):
        if self.armed:
            raise OSError("disk on fire")
        return {}

    def load_state_dict(self, state):
        pass


@pytest.mark.parametrize("second_name", ["model_0000002", "model_0000001"])
def test_failed_save_leaves_previous_checkpoint_and_pointer_intact(tmp_path, second_name):
    model, _, _, _ = make_run(seed=0)
    bomb = Bomb()
    checkpointer = Checkpointer(model, str(tmp_path), bomb=bomb)
    checkpointer.save("model_0000001", iteration=1)
    saved = params(model)
    with flow.no_grad():
        model.encoder.weight.fill_(9.0)
    bomb.armed = True
    with pytest.raises(OSError, match="disk on fire"):
        checkpointer.save(second_name, iteration=2)

    assert visible_entries(tmp_path) == ["last_checkpoint", "model_0000001"]
    assert read_last(tmp_path) == "model_0000001"
    fresh, _, _, _ = make_run(seed=3)
    assert Checkpointer(fresh, str(tmp_path)).resume_or_load(None) == {"iteration": 1}
    assert_same_params(saved, params(fresh))


def test_save_replaces_a_checkpoint_of_the_same_name(tmp_path):
    model, _, _, _ = make_run(seed=0)
    checkpointer = Checkpointer(model, str(tmp_path))
    checkpointer.save("model_final", iteration=1)
    with flow.no_grad():
        model.encoder.weight.fill_(2.0)
    checkpointer.save("model_final", iteration=2)
    assert visible_entries(tmp_path) == ["last_checkpoint", "model_final"]
    fresh, _, _, _ = make_run(seed=3)
    assert Checkpointer(fresh, str(tmp_path)).load("model_final") == {"iteration": 2}
    np.testing.assert_array_equal(fresh.encoder.weight.numpy(), np.full((8, 4), 2.0, np.float32))


def test_killed_save_leaves_previous_checkpoint_and_is_cleaned_next_time(tmp_path):
    save_dir = str(tmp_path / "run")
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "crash_checkpoint_script.py"), save_dir],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
    )
    assert proc.returncode == -9, proc.stdout[-2000:]
    entries = visible_entries(save_dir)
    leftovers = [e for e in entries if e.startswith(".tmp-model_0000002-")]
    assert len(leftovers) == 1 and entries == sorted([leftovers[0], "last_checkpoint",
                                                      "model_0000001"])
    partial = os.path.join(save_dir, leftovers[0])
    assert os.path.isdir(os.path.join(partial, "model"))  # it died after writing the model
    assert read_last(save_dir) == "model_0000001"

    flow.manual_seed(0)
    reference = flow.nn.Linear(3, 2)  # what the crashed run saved first
    model = flow.nn.Linear(3, 2)
    checkpointer = Checkpointer(model, save_dir)
    with pytest.raises(CheckpointError, match=re.escape(partial) + ".*incomplete"):
        checkpointer.load(partial)
    assert checkpointer.resume_or_load(None) == {"iteration": 1}
    assert_same_params(params(reference), params(model))

    checkpointer.save("model_0000002", iteration=2)
    assert visible_entries(save_dir) == ["last_checkpoint", "model_0000001", "model_0000002"]


def test_replace_interrupted_between_renames_is_repaired(tmp_path):
    model, _, _, _ = make_run(seed=0)
    checkpointer = Checkpointer(model, str(tmp_path))
    checkpointer.save("model_final", iteration=5)
    # What a crash between "move the old one aside" and "move the new one in" leaves, by a
    # process id above Linux's PID_MAX_LIMIT (so certainly not running).
    dead = 4194304 + 7
    os.rename(tmp_path / "model_final", tmp_path / f".old-model_final-{dead}")
    (tmp_path / f".tmp-model_final-{dead}").mkdir()
    (tmp_path / f".tmp-last_checkpoint-{dead}").write_text("model_final")
    fresh, _, _, _ = make_run(seed=3)
    assert Checkpointer(fresh, str(tmp_path)).resume_or_load(None) == {"iteration": 5}
    assert_same_params(params(model), params(fresh))
    assert visible_entries(tmp_path) == ["last_checkpoint", "model_final"]


def test_checkpoint_without_manifest_is_refused(tmp_path):
    model, _, _, _ = make_run(seed=0)
    path = Checkpointer(model, str(tmp_path)).save("model_0000003")
    os.remove(os.path.join(path, "manifest.json"))
    with pytest.raises(CheckpointError, match=re.escape(path) + ".*no manifest.json"):
        Checkpointer(model).load(path)
    assert Checkpointer(model, str(tmp_path)).get_all_checkpoint_files() == []


# ---------------------------------------------------------------------------------------------
# Corrupt and wrong paths
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def saved_checkpoint(tmp_path):
    model, _, _, _ = make_run(seed=0)
    return model, Checkpointer(model, str(tmp_path)).save("model_0000004", iteration=4)


def _tensor_data_files(path):
    return sorted(
        os.path.join(root, name) for root, _, names in os.walk(os.path.join(path, "model"))
        for name in names if name != "pickled_data" and name != "meta"
    )


def test_truncated_tensor_file_is_reported_as_corrupt(saved_checkpoint):
    model, path = saved_checkpoint
    data = _tensor_data_files(path)[0]
    size = os.path.getsize(data)
    with open(data, "r+b") as f:
        f.truncate(size // 2)
    rel = os.path.relpath(data, path)
    with pytest.raises(CheckpointError, match=re.escape(f"{path} is corrupt: {rel} has "
                                                        f"{size // 2} bytes")):
        Checkpointer(model).load(path)


def test_scrambled_part_is_reported_with_its_path(saved_checkpoint):
    model, path = saved_checkpoint
    pickled = os.path.join(path, "model", "pickled_data")
    size = os.path.getsize(pickled)
    with open(pickled, "wb") as f:
        f.write(b"\x00" * size)
    with pytest.raises(CheckpointError, match=re.escape("the content of model/pickled_data changed")):
        Checkpointer(model).load(path)
    # unchecked (trusted storage), the read itself fails and names the part
    with pytest.raises(CheckpointError, match=re.escape(f"cannot read {path}/model")):
        Checkpointer(model, verify=False).load(path)


def test_garbage_manifest_is_reported_as_corrupt(saved_checkpoint):
    model, path = saved_checkpoint
    manifest = os.path.join(path, "manifest.json")
    with open(manifest) as f:
        good = f.read()
    with open(manifest, "w") as f:
        f.write("{not json")
    with pytest.raises(CheckpointError, match="corrupt: unreadable manifest.json"):
        Checkpointer(model).load(path)
    with open(manifest, "w") as f:
        f.write(good.replace('"version": 1', '"version": 99'))
    with pytest.raises(CheckpointError, match="version 99 is newer"):
        Checkpointer(model).load(path)


def test_wrong_paths_say_what_was_expected(tmp_path, saved_checkpoint):
    model, path = saved_checkpoint
    checkpointer = Checkpointer(model)
    with pytest.raises(CheckpointError, match="does not exist"):
        checkpointer.load(str(tmp_path / "nowhere"))
    with pytest.raises(CheckpointError, match="is a file; expected a checkpoint directory"):
        checkpointer.load(os.path.join(path, "manifest.json"))
    with pytest.raises(CheckpointError, match="is a save_dir, not a checkpoint"):
        checkpointer.load(str(tmp_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="not a libai checkpoint"):
        checkpointer.load(str(empty))
    plain = str(tmp_path / "plain")
    flow.save(model.state_dict(), plain)
    with pytest.raises(CheckpointError, match="plain flow.save directory.*load_weights_only"):
        checkpointer.load(plain)


# ---------------------------------------------------------------------------------------------
# Keys and shapes
# ---------------------------------------------------------------------------------------------
def test_missing_and_unexpected_keys_are_reported(tmp_path, caplog):
    flow.manual_seed(0)
    old = Net(head="old_head")
    path = Checkpointer(old, str(tmp_path)).save("model_final")
    flow.manual_seed(1)
    new = Net(head="new_head")
    head_before = new.new_head.weight.numpy().copy()
    checkpointer = Checkpointer(new)
    with caplog.at_level(logging.WARNING, logger="libai.utils.checkpoint"):
        checkpointer.load(path)
    report = checkpointer.last_load_report
    assert report.missing_keys == ["new_head.bias", "new_head.weight"]
    assert report.unexpected_keys == ["old_head.bias", "old_head.weight"]
    for key in report.missing_keys + report.unexpected_keys:
        assert key in caplog.text
    np.testing.assert_array_equal(new.encoder.weight.numpy(), old.encoder.weight.numpy())
    np.testing.assert_array_equal(new.new_head.weight.numpy(), head_before)


def test_shape_mismatch_lists_key_and_both_shapes(tmp_path):
    flow.manual_seed(0)
    path = Checkpointer(Net(hidden=8), str(tmp_path)).save("model_final")
    model = Net(hidden=5)
    before = params(model)
    with pytest.raises(CheckpointError, match="does not fit the model: 3 tensor") as info:
        Checkpointer(model).load(path)
    message = str(info.value)
    for key, saved, own in [("encoder.weight", (8, 4), (5, 4)), ("encoder.bias", (8,), (5,)),
                            ("head.weight", (3, 8), (3, 5))]:
        assert re.search(rf"{re.escape(key)}\s+{re.escape(str(saved))}\s+{re.escape(str(own))}",
                         message), message
    assert_same_params(before, params(model))


# ---------------------------------------------------------------------------------------------
# Queries, resume, weights only, retention
# ---------------------------------------------------------------------------------------------
def test_queries_and_resume_or_load(tmp_path):
    model, optimizer, scheduler, _ = make_run(seed=0)
    save_dir = str(tmp_path / "run")
    checkpointer = Checkpointer(model, save_dir, optimizer=optimizer)
    assert not checkpointer.has_checkpoint() and checkpointer.get_checkpoint_file() == ""
    before = params(model)
    assert checkpointer.resume_or_load(None, resume=True) == {}
    assert checkpointer.resume_or_load("", resume=False) == {}
    assert_same_params(before, params(model))

    train_step(model, optimizer, scheduler, seed=0)
    checkpointer.save("model_0000000", iteration=0)
    checkpointer.save("model_final", iteration=1)
    assert checkpointer.has_checkpoint()
    assert checkpointer.get_checkpoint_file() == os.path.join(save_dir, "model_final")
    assert checkpointer.get_all_checkpoint_files() == [
        os.path.join(save_dir, "model_0000000"), os.path.join(save_dir, "model_final")]

    model2, optimizer2, _, _ = make_run(seed=1)
    resumed = Checkpointer(model2, save_dir, optimizer=optimizer2)
    assert resumed.resume_or_load("ignored-when-resuming", resume=True) == {"iteration": 1}
    assert_same_params(params(model), params(model2))
    assert optimizer_tensors(optimizer2).keys() == optimizer_tensors(optimizer).keys()

    model3, optimizer3, _, _ = make_run(seed=2)
    fresh = Checkpointer(model3, str(tmp_path / "new_run"), optimizer=optimizer3)
    assert fresh.resume_or_load(os.path.join(save_dir, "model_0000000"), resume=True) == {}
    assert_same_params(params(model), params(model3))
    assert optimizer_tensors(optimizer3) == {}  # weights only


def test_load_weights_only_reads_a_plain_flow_save_directory(tmp_path):
    flow.manual_seed(0)
    source = Net()
    plain = str(tmp_path / "pretrained")
    flow.save(source.state_dict(), plain)
    flow.manual_seed(1)
    model = Net()
    Checkpointer(model).load_weights_only(plain)
    assert_same_params(params(source), params(model))


def test_keep_last_spares_final_and_the_last_checkpoint(tmp_path):
    model, _, _, _ = make_run(seed=0)
    checkpointer = Checkpointer(model, str(tmp_path))
    for it in (0, 2, 3, 4):
        checkpointer.save(checkpoint_name(it), iteration=it)
    checkpointer.save("model_final", tag_last_checkpoint=False)
    checkpointer.save(checkpoint_name(1), iteration=1)  # now named by last_checkpoint
    assert read_last(tmp_path) == "model_0000001"

    assert checkpointer.keep_last(2) == ["model_0000000", "model_0000002"]
    assert visible_entries(tmp_path) == [
        "last_checkpoint", "model_0000001", "model_0000003", "model_0000004", "model_final"]
    assert checkpointer.keep_last(5) == []
    assert checkpointer.keep_last(None) == []
    with pytest.raises(ValueError, match="max_to_keep must be >= 1"):
        checkpointer.keep_last(0)


def test_save_to_disk_false_writes_nothing(tmp_path):
    model, _, _, _ = make_run(seed=0)
    Checkpointer(model, str(tmp_path / "run"), save_to_disk=False).save("model_final")
    assert not os.path.exists(tmp_path / "run")


def test_bad_arguments_are_explained(tmp_path):
    model, _, _, _ = make_run(seed=0)
    with pytest.raises(TypeError, match="'sampler' .*needs state_dict"):
        Checkpointer(model, str(tmp_path), sampler=object())
    with pytest.raises(ValueError, match="'extra' is reserved"):
        Checkpointer(model, str(tmp_path), extra=Counter())
    checkpointer = Checkpointer(model, str(tmp_path))
    for name in ["../escape", ".hidden", "last_checkpoint", ""]:
        with pytest.raises(ValueError, match="invalid checkpoint name"):
            checkpointer.save(name)
    with pytest.raises(ValueError, match="no save_dir"):
        Checkpointer(model).save("model_final")


# ---------------------------------------------------------------------------------------------
# Durability: one syncfs, or an fsync per file and directory where there is none
# ---------------------------------------------------------------------------------------------
def _count_syncs(monkeypatch, syncfs_works):
    from libai.utils import checkpoint_files

    calls = {"syncfs": [], "fsync": []}
    real_fsync, real_syncfs = os.fsync, checkpoint_files._syncfs

    def fsync(fd):
        calls["fsync"].append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def syncfs(path):
        calls["syncfs"].append(path)
        return real_syncfs(path) if syncfs_works else False

    monkeypatch.setattr(checkpoint_files.os, "fsync", fsync)
    monkeypatch.setattr(checkpoint_files, "_syncfs", syncfs)
    return calls


@pytest.mark.parametrize("syncfs_works", [True, False])
def test_a_save_makes_the_whole_checkpoint_durable_before_publishing_it(tmp_path, monkeypatch, syncfs_works):
    """OneFlow writes a directory per tensor: with syncfs(2) (Linux) one call flushes them all
    (an fsync each cost a journal commit each); without it, every file and every directory of
    the checkpoint is fsynced. Either way before the rename that publishes it."""
    model, optimizer, _, _ = make_run(seed=0)
    calls = _count_syncs(monkeypatch, syncfs_works)
    final = Checkpointer(model, str(tmp_path), optimizer=optimizer).save("model_0000001", iteration=1)
    tree = [os.path.join(d, n) for d, dirs, names in os.walk(final) for n in dirs + names]
    assert len(calls["syncfs"]) == 1 and os.path.basename(calls["syncfs"][0]).startswith(".tmp-model_0000001")
    inside = [p.replace(calls["syncfs"][0], final) for p in calls["fsync"] if p.startswith(calls["syncfs"][0])]
    manifest = os.path.join(final, "manifest.json")
    assert inside[-1] == manifest  # written after the flush, synced on its own
    if syncfs_works:
        assert inside == [manifest]
    else:
        assert sorted(inside[:-1]) == sorted(set(tree + [final]) - {manifest})
