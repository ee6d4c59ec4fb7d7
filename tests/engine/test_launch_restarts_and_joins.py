"""``python -m libai.launch``'s join timeout and restarts, with ranks that start in a fraction of
a second (launch_probe.py), except the missing-node case, whose rank 0 imports OneFlow to meet
its peer: run through both launchers at once.

The restarts of real trainings (a SIGKILLed rank, a deterministic failure) are in
test_launcher.py, beside the uninterrupted run they are compared with.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from libai._join import BAD_LAUNCH_STATUS, JOIN_TIMEOUT_STATUS
from libai.launch import oneflow_launch_path
from libai.launch_restart import Failure, RestartPolicy
from libai.utils.testing import free_port
from mnist_helpers import REPO

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "launch_probe.py")
JOIN_TIMEOUT = 12


def _node0(module: str, port: int, *extra: str, addr: str = "127.0.0.1") -> list:
    program = ["-m", "libai.launch"] if module == "libai" else [oneflow_launch_path()]
    return [sys.executable, *program, "--nnodes", "2", "--node_rank", "0", "--nproc_per_node", "1",
            "--master_addr", addr, "--master_port", str(port), *extra]


def _start(cmd, env=None):
    full = dict(os.environ, PYTHONPATH=REPO, **(env or {}))
    return subprocess.Popen(cmd, cwd=REPO, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def _read_lines(proc, timeout):
    """(seconds after start, line) of everything ``proc`` prints until it ends or ``timeout``."""
    t0, lines = time.monotonic(), []
    try:
        for line in proc.stdout:
            lines.append((time.monotonic() - t0, line))
        proc.wait(timeout=max(1, timeout - (time.monotonic() - t0)))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return lines, time.monotonic() - t0


def test_a_missing_node_is_named_within_seconds_and_the_launch_gives_up_after_the_join_timeout(tmp_path):
    """Node 0 of 2 with node 1 never started, through libai's launcher and OneFlow's at once."""
    ours = _start(_node0("libai", free_port(), "--join-timeout", str(JOIN_TIMEOUT), PROBE, "oneflow",
                         str(tmp_path / "ours")))
    theirs = _start(_node0("oneflow", free_port(), PROBE, "oneflow", str(tmp_path / "theirs")),
                    env={"LIBAI_JOIN_TIMEOUT": str(JOIN_TIMEOUT)})
    results = {}
    threads = [threading.Thread(target=lambda n=n, p=p: results.__setitem__(n, _read_lines(p, 60)))
               for n, p in (("ours", ours), ("theirs", theirs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, proc in (("ours", ours), ("theirs", theirs)):
        lines, took = results[name]
        text = "".join(line for _, line in lines)
        waiting = [(t, line) for t, line in lines if "waits for" in line and "join timeout)" in line]
        assert waiting and waiting[0][0] < 10, text  # said within seconds
        assert re.search(r"rank 0 of 2 .*waits for .*rank 1.* at 127\.0\.0\.1:\d+", waiting[0][1]), text
        assert "did not all join within the join timeout of 12 s; giving up" in text, text
        assert JOIN_TIMEOUT <= took < JOIN_TIMEOUT + 15, (name, took)
        assert proc.returncode != 0 and "joined" not in text
    assert ours.returncode == JOIN_TIMEOUT_STATUS
    assert "node(s) 1 (rank 1)" in "".join(line for _, line in results["ours"][0])  # ours knows the nodes


@pytest.mark.parametrize("module", ["libai", "oneflow"])
def test_a_port_in_use_and_an_address_that_does_not_resolve_are_reported_at_once(tmp_path, module):
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("", 0))
        busy.listen()
        port = busy.getsockname()[1]
        t0 = time.monotonic()
        taken = subprocess.run(_node0(module, port, PROBE, "oneflow", str(tmp_path / "p")), cwd=REPO,
                               capture_output=True, text=True, timeout=60)
        took = time.monotonic() - t0
    out = taken.stdout + taken.stderr
    assert taken.returncode != 0 and took < 10, out
    assert f"port {port} (--master_port) is already in use on this machine" in out and "joined" not in out
    bad = subprocess.run(_node0(module, free_port(), PROBE, "oneflow", str(tmp_path / "b"),
                                addr="no-such-node.invalid"),
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    out = bad.stdout + bad.stderr
    assert bad.returncode != 0, out
    assert "the master address 'no-such-node.invalid' does not resolve" in out and "joined" not in out
    if module == "libai":  # refused before any rank started
        assert taken.returncode == bad.returncode == BAD_LAUNCH_STATUS
        assert not os.path.exists(tmp_path / "p.rank0")


def test_a_failed_rank_restarts_every_rank_with_resume_and_the_restart_is_logged(tmp_path):
    out = str(tmp_path / "probe")
    proc = subprocess.run([sys.executable, "-m", "libai.launch", "--nproc_per_node", "2", "--master_port",
                           str(free_port()), "--max-restarts", "1", PROBE, "flaky", out, "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rank in (0, 1):  # the second attempt of every rank had --resume first
        with open(f"{out}.rank{rank}.argv") as f:
            assert f.read().splitlines() == [f"flaky {out} 1", f"--resume flaky {out} 1"]
    with open(tmp_path / "restarts.log") as f:
        log = f.read()
    assert "restart 1 of 1: rank 1 exit status 3" in log and "| probe: rank failing on purpose" in log
    assert "restart 1 of 1: rank 1 exit status 3" in proc.stderr


def test_no_restart_after_a_signal_to_the_launcher(tmp_path):
    out = str(tmp_path / "probe")
    env = dict(os.environ, LIBAI_MAX_RESTARTS="3")
    proc = subprocess.Popen([sys.executable, "-m", "libai.launch", "--nproc_per_node", "2", "--master_port",
                             str(free_port()), PROBE, "wait", out], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 20
    while not all(os.path.exists(f"{out}.rank{r}.pid") for r in (0, 1)) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, output
    assert "restart" not in output


def _failure(rank, iteration, checkpoint="model_0000009"):
    return Failure(rank, -9, (checkpoint, iteration), ["line\n"])


def test_the_same_failure_twice_is_deterministic_and_progress_is_not():
    policy = RestartPolicy(max_restarts=5)
    assert policy.verdict(_failure(1, 12)) is None
    policy.restarts += 1
    assert policy.verdict(_failure(1, 15)) is None  # got further: worth another try
    policy.restarts += 1
    assert policy.verdict(_failure(0, 15)) is None  # another rank
    policy.restarts += 1
    verdict = policy.verdict(_failure(0, 15))
    assert verdict and "the failure is deterministic" in verdict and "rank 0 killed by SIGKILL (status 137)" in verdict
    spent = RestartPolicy(max_restarts=0)
    assert "no restarts left (--max-restarts 0)" in spent.verdict(_failure(1, None, None))
    unknown = RestartPolicy(max_restarts=3)  # where a run was is unknown: not called deterministic
    assert unknown.verdict(_failure(1, None, None)) is None and unknown.verdict(_failure(1, None, None)) is None


def test_the_flags_their_environment_variables_and_bad_values(monkeypatch):
    from libai._join import join_timeout
    from libai.launch import parse_args, rank_command, rank_environment

    args = parse_args(["--nnodes", "2", "--nproc_per_node", "4", "train.py", "--config-file", "c.py", "a=1"])
    assert (args.max_restarts, args.join_timeout) == (0, 600.0)
    assert rank_command(args, resume=True)[-4:] == ["--resume", "--config-file", "c.py", "a=1"]
    env = rank_environment(args, 1, base={})
    assert (env["LIBAI_JOIN_TIMEOUT"], env["LIBAI_NNODES"], env["LIBAI_NPROC_PER_NODE"]) == ("600", "2", "4")
    monkeypatch.setenv("LIBAI_MAX_RESTARTS", "3")
    monkeypatch.setenv("LIBAI_JOIN_TIMEOUT", "90")
    args = parse_args(["train.py"])
    assert (args.max_restarts, args.join_timeout) == (3, 90.0)
    assert parse_args(["--max-restarts", "1", "--join_timeout", "5", "train.py"]).max_restarts == 1
    with pytest.raises(ValueError, match=r"LIBAI_JOIN_TIMEOUT='soon' must be a number of seconds"):
        join_timeout({"LIBAI_JOIN_TIMEOUT": "soon"})
