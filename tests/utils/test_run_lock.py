"""One live run per output directory (libai.utils.run_lock): the holder's record, refusals that
name it, take-over of a lock left by a dead process, release on every way out, and a refusal
that every rank of a multi-process run makes together.

The end-to-end cases (a second ``tools/train_net.py`` launch into a training run's directory;
the lock a SIGKILLed rank 0 left behind) are in tests/engine/test_launcher.py."""
import datetime
import json
import logging
import os
import shlex
import socket
import subprocess
import sys

import pytest

from libai.utils.run_lock import LOCK_NAME, LockHolder, OutputDirInUse, RunLock, hold_output_dir, process_start_ticks
from libai.utils.testing import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HOLD = ("import sys; sys.path.insert(0, sys.argv[1]); from libai.utils.run_lock import RunLock; "
        "RunLock(sys.argv[2], ['train_net.py', '--first']).acquire(); print('held', flush=True); "
        "sys.stdin.read(); import os; os._exit(0)")  # ends without releasing, as a killed run


@pytest.fixture
def warnings_of_run_lock():
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    logger = logging.getLogger("libai.utils.run_lock")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


def write_record(out_dir, **fields):
    os.makedirs(out_dir, exist_ok=True)
    record = dict(pid=1, host=socket.gethostname(), started="2026-01-01T00:00:00+00:00",
                  command="tools/train_net.py --earlier", proc_start=None)
    record.update(fields)
    with open(os.path.join(out_dir, LOCK_NAME), "w") as f:
        json.dump(record, f)
    return record


def dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_the_holder_writes_its_record_and_removes_it_when_done(tmp_path):
    out = str(tmp_path / "run")
    lock = RunLock(out, ["tools/train_net.py", "--config-file", "my config.py"])
    me = lock.acquire()
    with open(os.path.join(out, LOCK_NAME)) as f:
        record = json.load(f)
    assert record == {"pid": os.getpid(), "host": socket.gethostname(), "started": me.started,
                      "command": "tools/train_net.py --config-file 'my config.py'",
                      "proc_start": process_start_ticks(os.getpid())}
    started = datetime.datetime.fromisoformat(record["started"])
    assert abs((datetime.datetime.now().astimezone() - started).total_seconds()) < 60
    lock.release()
    assert not os.path.exists(os.path.join(out, LOCK_NAME))
    lock.release()  # twice is harmless


def test_process_start_ticks_reads_field_22_of_proc_stat():
    with open(f"/proc/{os.getpid()}/stat") as f:
        fields = f.read().split()  # this process's name (python) has no spaces
    assert process_start_ticks(os.getpid()) == int(fields[21])


def test_a_live_run_in_another_process_is_refused_by_name_and_its_lock_left_alone(tmp_path):
    out = str(tmp_path / "run")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, REPO, out], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with open(os.path.join(out, LOCK_NAME), "rb") as f:
            before = f.read()
        with pytest.raises(OutputDirInUse) as refusal:
            RunLock(out).acquire()
        message = str(refusal.value)
        assert message.startswith(f"train.output_dir {out!r} belongs to another run (it is running): "
                                   f"pid {holder.pid} on host {socket.gethostname()}, started ")
        assert "command: train_net.py --first." in message
        assert "train.output_dir=/a/new/dir" in message and "wait until that run ends" in message
        with open(os.path.join(out, LOCK_NAME), "rb") as f:
            assert f.read() == before
    finally:
        holder.communicate("")
    # its holder gone (it exited without releasing: the kernel dropped the flock), the lock is free
    lock = RunLock(out)
    lock.acquire()
    assert lock.taken_over is not None and lock.taken_over.pid == holder.pid
    lock.release()


def test_a_lock_left_by_a_dead_process_of_this_host_is_taken_over_with_a_warning(tmp_path, warnings_of_run_lock):
    out = str(tmp_path / "run")
    pid = dead_pid()
    write_record(out, pid=pid)
    lock = RunLock(out)
    me = lock.acquire()
    assert lock.taken_over == LockHolder(pid, socket.gethostname(), "2026-01-01T00:00:00+00:00",
                                         "tools/train_net.py --earlier", None)
    assert [r.getMessage() for r in warnings_of_run_lock] == [
        f"Taking over {os.path.join(out, LOCK_NAME)}: it was left by a run that no longer runs (pid {pid} "
        f"on host {socket.gethostname()}, started 2026-01-01T00:00:00+00:00, command: tools/train_net.py --earlier)"]
    with open(os.path.join(out, LOCK_NAME)) as f:
        assert json.load(f)["pid"] == me.pid == os.getpid()
    lock.release()


def test_a_recycled_pid_is_not_the_holder_but_a_live_one_is(tmp_path):
    out = str(tmp_path / "run")
    parent = os.getppid()  # alive, holds no lock: only the record speaks for it
    write_record(out, pid=parent, proc_start=process_start_ticks(parent) + 1)
    lock = RunLock(out)
    lock.acquire()
    assert lock.taken_over.pid == parent
    lock.release()
    write_record(out, pid=parent, proc_start=process_start_ticks(parent))
    with pytest.raises(OutputDirInUse, match=f"it is running\\): pid {parent} on host"):
        RunLock(out).acquire()


def test_a_lock_from_another_host_is_refused_and_the_message_says_what_to_delete(tmp_path):
    out = str(tmp_path / "run")
    write_record(out, host="node-17", pid=dead_pid())
    with pytest.raises(OutputDirInUse) as refusal:
        RunLock(out).acquire()
    path = os.path.join(out, LOCK_NAME)
    assert f"its host is not this one, so whether it still runs cannot be checked; delete {path} once it " \
           f"has ended): pid" in str(refusal.value) and "on host node-17" in str(refusal.value)


def test_one_process_cannot_hold_one_directory_twice_and_the_with_block_releases_on_error(tmp_path):
    out = str(tmp_path / "run")
    with pytest.raises(ZeroDivisionError):
        with hold_output_dir(out, ["first"]) as lock:
            assert lock is not None and lock.holder.command == "first"
            with pytest.raises(OutputDirInUse, match=f"pid {os.getpid()} on host"):
                RunLock(out).acquire()
            1 / 0
    assert not os.path.exists(os.path.join(out, LOCK_NAME))
    with hold_output_dir(out):  # free again
        assert os.path.exists(os.path.join(out, LOCK_NAME))


def test_an_output_dir_that_cannot_be_created_is_named_with_the_fix(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.raises(PermissionError, match=r"train.output_dir '.*a_file/out' is not writable \(.*\); "
                                              r"choose another with train.output_dir="):
        RunLock(str(blocker / "out")).acquire()


def test_every_rank_refuses_when_rank_0_cannot_take_the_lock(tmp_path):
    """Rank 1 never touches the file: it learns rank 0's refusal and raises by itself (its
    script ignores the launcher's SIGTERM), instead of waiting in its first collective."""
    out, marker = str(tmp_path / "run"), str(tmp_path / "marker")
    held = RunLock(out, ["the", "first", "run"])
    held.acquire()
    try:
        cmd = [sys.executable, "-m", "libai.launch", "--nproc_per_node", "2", "--master_port", str(free_port()),
               os.path.join(HERE, "run_lock_script.py"), out, marker]
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    finally:
        held.release()
    assert proc.returncode == 3, proc.stdout + proc.stderr
    expected = (f"train.output_dir {out!r} belongs to another run (it is running): pid {os.getpid()} on host "
                f"{socket.gethostname()}, started {held.holder.started}, command: {shlex.join(['the', 'first', 'run'])}.")
    with open(f"{marker}.rank0") as f:
        assert f.read().startswith(f"refused: {expected}")
    with open(f"{marker}.rank1") as f:
        assert f.read().startswith(f"refused: rank 0 refused the run: {expected}")
