"""The hang watchdog (libai.engine.watchdog): a late phase writes stacks and names the late
ranks, a phase past the timeout ends the process with EXIT_CODE, a normal run leaves no trace.

The two-rank logic is driven by hand (two Watchdog objects sharing an output dir, an injected
clock and exit) so that it costs nothing; one real DefaultTrainer run in a subprocess proves the
wiring: a step that sleeps ends the process within the timeout, with the stacks written."""
import json
import os
import subprocess
import sys
import time

import pytest

from libai.engine.watchdog import ENV, EXIT_CODE, Watchdog, WatchdogSettings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _pair(tmp_path, **settings):
    clock, exits = Clock(), []
    s = WatchdogSettings(**{"factor": 5.0, "floor": 1.0, "timeout": 30.0, "window": 5, **settings})
    dogs = [Watchdog(s, str(tmp_path), rank, 2, clock=clock, exit=exits.append) for rank in (0, 1)]
    for dog in dogs:
        os.makedirs(dog.folder, exist_ok=True)
        for i in range(4):  # a history of 0.5 s steps: late after max(1, 5 x 0.5) = 2.5 s
            dog.begin("training step", i)
            clock.now += 0.5
            dog.end()
    return dogs, clock, exits


def test_a_late_rank_writes_every_ranks_stacks_and_a_timeout_exits(tmp_path, caplog):
    (rank0, rank1), clock, exits = _pair(tmp_path)
    rank1.begin("training step", 4)
    clock.now += 2.0
    rank0.begin("training step", 4)  # rank 0 waits in the step's collective, since 0.5 s ago
    for dog in (rank1, rank0):
        dog.check()
    assert not os.path.exists(rank1.stacks_path)  # 2 s < 2.5 s: not late yet
    clock.now += 1.0
    rank1.check()  # 3 s: late
    with open(rank1.stacks_path) as f:
        stacks = f.read()
    assert "rank 1 is late: training step 4 for 3.0 s" in stacks and "test_watchdog.py" in stacks
    rank0.check()  # 1 s into its step, not late itself: dumps because rank 1 is
    with open(rank0.stacks_path) as f:
        assert "rank(s) 1 late; rank 0: training step 4 for 1.0 s" in f.read()
    late_msgs = [r.getMessage() for r in caplog.records if "Watchdog" in r.getMessage()]
    assert any("longer than 2.5 s (5x its median of 0.50 s, at least 1 s). Stacks in" in m
               and "Late ranks: rank 1 (training step 4 for 3.0 s)" in m for m in late_msgs)
    rank1.check()
    assert open(rank1.stacks_path).read().count("===") == 1  # once per late phase
    assert exits == []
    clock.now += 29.0
    rank1.check()  # 32 s > 30 s: rank 1 ends; rank 0's last heartbeat said where it was
    assert exits == [EXIT_CODE]
    final = [r.getMessage() for r in caplog.records if "more than train.watchdog.timeout" in r.getMessage()]
    assert ("Where each rank was: rank 0: training step 4 for 1.0 s; rank 1: training step 4 for "
            "32.0 s (late)") in final[0]
    rank0.check()  # 30 s: not yet
    clock.now += 1.0
    rank0.check()
    assert exits == [EXIT_CODE, EXIT_CODE]


def test_a_phase_without_history_is_judged_by_the_timeout_only(tmp_path):
    clock, exits = Clock(), []
    dog = Watchdog(WatchdogSettings(floor=1.0, timeout=10.0), str(tmp_path), clock=clock, exit=exits.append)
    os.makedirs(dog.folder)
    dog.begin("checkpoint save", 0)  # a first save, e.g. slow file system: no history
    clock.now += 9.0
    dog.check()
    assert not os.path.exists(dog.stacks_path) and exits == []
    clock.now += 2.0
    dog.check()
    assert exits == [EXIT_CODE] and "is late: checkpoint save 0" in open(dog.stacks_path).read()


def test_settings_from_config_and_environment():
    node = {"enabled": True, "factor": 10.0, "floor": 300.0, "timeout": 1800.0, "window": 50}
    assert WatchdogSettings.from_config(node, {}) == WatchdogSettings()
    assert not WatchdogSettings.from_config(node, {ENV: "0"}).enabled
    got = WatchdogSettings.from_config(node, {ENV: "timeout=20, floor=0.5,window=7"})
    assert (got.timeout, got.floor, got.window, got.factor) == (20.0, 0.5, 7, 10.0)
    with pytest.raises(ValueError, match="'tmeout=3' is not key=value with a key among"):
        WatchdogSettings.from_config(node, {ENV: "tmeout=3"})
    with pytest.raises(ValueError, match="need factor > 1"):
        WatchdogSettings.from_config({**node, "factor": 0.5}, {})


def test_a_normal_run_writes_no_stacks_and_a_rank_of_several_leaves_its_heartbeat(tmp_path):
    """(What the marks cost is measured by benchmarks/bench_watchdog_overhead.py, not here.)"""
    dog = Watchdog(WatchdogSettings(floor=0.2, timeout=2.0), str(tmp_path), rank=0,
                   world_size=2).start()  # wakes every 0.05 s
    for i in range(2000):
        dog.begin("training step", i)
        dog.end()
    time.sleep(0.2)
    dog.stop()
    assert not os.path.exists(dog.stacks_path)
    with open(os.path.join(dog.folder, "heartbeat-rank0.json")) as f:
        assert json.load(f)["where"] == "finished"


def _probe(tmp_path, sleep, watchdog):
    env = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", **{ENV: watchdog})
    start = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.join(HERE, "watchdog_probe.py"), str(tmp_path), "8", sleep],
                          env=env, capture_output=True, text=True, timeout=120)
    return proc, time.monotonic() - start


def test_a_step_that_sleeps_ends_the_run_with_stacks_within_the_timeout(tmp_path):
    proc, seconds = _probe(tmp_path, "60", "floor=0.3,factor=5,timeout=3")
    assert proc.returncode == EXIT_CODE, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "TRAINING DONE" not in proc.stdout
    assert seconds < 40  # start-up and 8 steps, then the 3 s timeout; the sleep was 60 s
    with open(os.path.join(tmp_path, "watchdog", "stacks-rank0.txt")) as f:
        stacks = f.read()
    assert "rank 0 is late: training step 8" in stacks
    assert "in before_step" in stacks and "watchdog_probe.py" in stacks  # where it slept
    out = proc.stdout + proc.stderr
    assert "Where each rank was: rank 0: training step 8 for 3." in out


def test_a_normal_run_has_no_stacks_file(tmp_path):
    proc, _ = _probe(tmp_path, "0", "floor=0.3,factor=5,timeout=3")
    assert proc.returncode == 0 and "TRAINING DONE" in proc.stdout, proc.stderr[-3000:]
    # one process has no peers to tell: no heartbeat files, no folder at all
    assert not os.path.exists(os.path.join(tmp_path, "watchdog"))
