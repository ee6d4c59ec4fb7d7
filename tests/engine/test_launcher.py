"""``python -m libai.launch``: OneFlow's launcher whose run owns its processes.

The first tests use ranks without OneFlow (launch_probe.py, a fraction of a second each): the
environment equals ``oneflow.distributed.launch``'s, signals reach every rank, a failed rank ends
the others, and no rank outlives a SIGKILLed launcher.

The last ones share one set of real 2-rank data-parallel trainings of the MNIST project (with
the probes of tests/parallel/probe_model.py: raw per-iteration losses of every rank), started
as a user would, through the launcher:

1. run P trains; a second launch S into P's output directory is refused while P lives;
2. SIGTERM to P's launcher: every rank stops after the same iteration, saves one checkpoint,
   and the launcher exits 0 with no process of the run left;
3. together: ``--resume`` of P, the uninterrupted run R (the reference losses), and run K whose
   rank 0 is SIGKILLed (the launch ends within seconds, non-zero, and leaves a stale lock);
4. beside them, two runs with ``--max-restarts 2``: X, whose rank 1 is SIGKILLed once at
   iteration 25 (restarted from ``model_0000019``, it must finish with R's losses and logs that
   hold each iteration once), and D, whose rank 1 fails at iteration 3 every time (stopped as
   deterministic after the second attempt).
"""
import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from typing import Dict, Iterator, List, Optional

import pytest

from libai.engine.hooks import PreemptionHandler
from libai.launch import KILL_GRACE_SECONDS
from libai.utils.run_lock import LOCK_NAME, RunLock
from libai.utils.testing import free_port
from mnist_helpers import REPO, quick_overrides

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "launch_probe.py")
TRAIN_NET = os.path.join(REPO, "tools", "train_net.py")
PROBE_CONFIG = os.path.join(REPO, "tests", "parallel", "probe_config.py")
ITERS = 50  # the ranks agree on a stop every 10 iterations (PreemptionHandler.check_period)
KILLED_AT = 25  # X's rank 1 dies there, after model_0000019: iterations 20-24 are done twice
SLOW_STEP = 0.5  # P's step time: ITERS of them leave S 25 s to start and be refused while P lives


def launcher(*args: str, module: str = "libai.launch", nproc: int = 2) -> List[str]:
    return [sys.executable, "-m", module, "--nproc_per_node", str(nproc),
            "--master_port", str(free_port()), *args]


_STARTED: List[subprocess.Popen] = []


def start_launch(cmd: List[str], log: str) -> subprocess.Popen:
    """Start a launch in its own session with its output in ``log`` (no pipe to keep drained)."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    _STARTED.append(proc)
    return proc


@pytest.fixture(scope="module", autouse=True)
def _end_leftover_launches():
    """A launch that a failed test or fixture left running is ended at the end of the module
    (its ranks die with the launcher)."""
    yield
    for proc in _STARTED:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _STARTED.clear()


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def wait_for(predicate, timeout: float, what: str, proc: Optional[subprocess.Popen] = None, log: str = ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.05)
    pytest.fail(f"{what} did not happen" + (f":\n{read(log)[-3000:]}" if log else ""))


def descendants(pid: int) -> List[int]:
    """Every process below ``pid`` (Linux /proc)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except FileNotFoundError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    kids = [int(c) for c in f.read().split()]
            except FileNotFoundError:
                continue
            found += kids
            todo += kids
    return sorted(set(found))


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def rank_of(pid: int) -> int:
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
    return int(env[b"RANK"])


@contextlib.contextmanager
def recorded_warnings(logger_name: str) -> Iterator[List[str]]:
    """The messages of WARNING and above logged to ``logger_name`` in the body."""
    records: List[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[assignment]
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


def finish(proc: subprocess.Popen, timeout: float) -> float:
    """Wait for ``proc``; returns the seconds it took. Kills its session on a timeout."""
    t0 = time.monotonic()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"the launch did not end within {timeout} s")
    return time.monotonic() - t0


# ------------------------------------------------------------------------------------------
# The launcher itself, with ranks that need no OneFlow.
# ------------------------------------------------------------------------------------------
def test_ranks_get_the_environment_oneflow_launch_gives_them(tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    port = str(free_port())
    for module, out in (("libai.launch", ours), ("oneflow.distributed.launch", theirs)):
        cmd = [sys.executable, "-m", module, "--nproc_per_node", "2", "--nnodes", "2", "--node_rank", "1",
               "--master_addr", "127.0.0.2", "--master_port", port, "--redirect_stdout_and_stderr",
               "--logdir", "logs", PROBE, "env", out]
        env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
        proc = subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        if module == "libai.launch":  # each rank's output went to the files OneFlow's launcher uses
            assert sorted(os.listdir(tmp_path / "logs")) == ["local_rank_0", "local_rank_1"]
            assert sorted(os.listdir(tmp_path / "logs" / "local_rank_1")) == ["stderr", "stdout"]
    for rank in (2, 3):
        mine, reference = json.loads(read(f"{ours}.rank{rank}")), json.loads(read(f"{theirs}.rank{rank}"))
        assert mine == reference
        assert mine["RANK"] == str(rank) and mine["LOCAL_RANK"] == str(rank - 2) and mine["WORLD_SIZE"] == "4"


def test_the_launcher_runs_without_loading_oneflow():
    """It only reads OneFlow's launch script: no OneFlow runtime in the launcher process."""
    code = ("import sys, libai.launch as l; a = l.parse_args(['--nproc_per_node', '3', 'x.py', '--y']); "
            "print('oneflow' in sys.modules, a.nproc_per_node, a.master_port, l.rank_command(a)[-2:])")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.stdout.split("\n")[0] == "False 3 29500 ['x.py', '--y']", out.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGUSR1])
def test_a_signal_to_the_launcher_reaches_every_rank_once_and_the_launch_exits_0(tmp_path, sig):
    out = str(tmp_path / "probe")
    proc = start_launch(launcher(PROBE, "wait", out), str(tmp_path / "log"))
    pids = [int(wait_for(lambda r=r: os.path.exists(f"{out}.rank{r}.pid") and read(f"{out}.rank{r}.pid"),
                         20, f"rank {r} start", proc)) for r in (0, 1)]
    assert descendants(proc.pid) == sorted(pids)
    for pid in pids:  # each rank leads its own process group (a terminal's Ctrl-C reaches only the launcher)
        assert os.getpgid(pid) == pid
    proc.send_signal(sig)
    finish(proc, 20)
    assert proc.returncode == 0, read(str(tmp_path / "log"))
    assert [read(f"{out}.rank{r}.signal") for r in (0, 1)] == [sig.name, sig.name]
    assert not any(running(pid) for pid in pids)


def test_a_failed_rank_ends_the_others_and_its_status_is_the_launchers(tmp_path):
    out = str(tmp_path / "probe")
    proc = start_launch(launcher(PROBE, "fail", out, "1", "3"), str(tmp_path / "log"))
    pid0 = int(wait_for(lambda: os.path.exists(f"{out}.rank0.pid") and read(f"{out}.rank0.pid"), 20, "start", proc))
    took = finish(proc, 30)
    assert proc.returncode == 3, read(str(tmp_path / "log"))
    # rank 0 ignores SIGTERM (as a rank stuck in a collective does): it was killed after the grace
    assert not running(pid0)
    assert took < KILL_GRACE_SECONDS + 3
    assert "exited with status 3" in read(str(tmp_path / "log"))


def test_a_second_signal_kills_ranks_that_do_not_stop(tmp_path):
    out = str(tmp_path / "probe")
    proc = start_launch(launcher(PROBE, "fail", out, "-1", "0"), str(tmp_path / "log"))  # no rank fails; all ignore SIGTERM
    pids = [int(wait_for(lambda r=r: os.path.exists(f"{out}.rank{r}.pid") and read(f"{out}.rank{r}.pid"),
                         20, f"rank {r} start", proc)) for r in (0, 1)]
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert proc.poll() is None and all(running(pid) for pid in pids)  # waiting for them to save
    proc.send_signal(signal.SIGTERM)
    finish(proc, 10)
    assert proc.returncode == 128 + signal.SIGTERM
    assert not any(running(pid) for pid in pids)


def test_no_rank_outlives_a_sigkilled_launcher(tmp_path):
    out = str(tmp_path / "probe")
    proc = start_launch(launcher(PROBE, "wait", out), str(tmp_path / "log"))
    pids = [int(wait_for(lambda r=r: os.path.exists(f"{out}.rank{r}.pid") and read(f"{out}.rank{r}.pid"),
                         20, f"rank {r} start", proc)) for r in (0, 1)]
    proc.kill()
    proc.wait()
    wait_for(lambda: not any(running(pid) for pid in pids), 5, "the ranks' death with the launcher")


def test_a_rank_takes_one_signal_delivered_twice_as_one_request_and_a_later_repeat_as_stop_now():
    """What a rank's PreemptionHandler does with a forwarded signal that the scheduler also sent
    it directly (Slurm signals every process at a time limit): no second-signal kill."""
    # The process may have started with SIGINT ignored (a job started in the background by a
    # non-interactive shell): begin from Python's own Ctrl-C handler, and put back what was there.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    handler = PreemptionHandler()
    handler.REPEAT_WINDOW_SECONDS = 0.3
    handler.before_train()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # the same request again: still only a request
        time.sleep(0.01)
        assert handler._received == signal.SIGINT and handler._anyone_received()
        time.sleep(0.35)
        with pytest.raises(KeyboardInterrupt):  # a later repeat: Python's own Ctrl-C behaviour
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
    finally:
        handler.after_train()
        restored = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, inherited)
    assert restored is signal.default_int_handler


# ------------------------------------------------------------------------------------------
# Real trainings through the launcher (shared launches, see the module docstring).
# ------------------------------------------------------------------------------------------
def _train_args(digits_dir: str, out: str, loss_log: str, **extra) -> List[str]:
    return ["--config-file", PROBE_CONFIG, *quick_overrides(digits_dir, out, **{
        "train.train_micro_batch_size": 8, "train.evaluation.enabled": False, "train.train_iter": ITERS,
        "train.checkpointer.period": 10, "model.loss_log": loss_log, **extra})]


def _iterations_seen(log: str) -> List[int]:
    return [int(n) for n in re.findall(r"iter: (\d+)/", read(log))]


@pytest.fixture(scope="module")
def runs(digits_dir, tmp_path_factory) -> Dict[str, dict]:
    """The launches of the module docstring, in order; what the tests look at."""
    tmp = str(tmp_path_factory.mktemp("launcher"))
    start = start_launch

    path = lambda name: os.path.join(tmp, name)  # noqa: E731
    res: Dict[str, dict] = {name: {"log": path(name + ".log")} for name in "PSRKBXD"}
    p_out = path("preempted")

    # 1. P trains slowly (0.5 s a step) so that S can start and be refused while P lives.
    p = start(launcher(TRAIN_NET, *_train_args(digits_dir, p_out, path("cut"), **{"model.step_seconds": SLOW_STEP})),
              res["P"]["log"])
    wait_for(lambda: _iterations_seen(res["P"]["log"]), 120, "P's first iteration", p, res["P"]["log"])
    res["P"]["pids"] = descendants(p.pid)
    res["P"]["rank0"] = next(pid for pid in res["P"]["pids"] if rank_of(pid) == 0)
    res["P"]["lock"] = json.loads(read(os.path.join(p_out, LOCK_NAME)))
    res["P"]["config"] = read(os.path.join(p_out, "config.yaml"))
    s = start(launcher(TRAIN_NET, *_train_args(digits_dir, p_out, path("second"), **{"train.seed": 4321})),
              res["S"]["log"])
    res["S"]["seconds"] = finish(s, 90)
    res["S"]["returncode"] = s.returncode
    res["P"]["config_after_S"] = read(os.path.join(p_out, "config.yaml"))
    res["P"]["lock_after_S"] = json.loads(read(os.path.join(p_out, LOCK_NAME)))

    # 2. SIGTERM to P's launcher.
    res["P"]["signalled_after"] = max(_iterations_seen(res["P"]["log"]))
    res["P"]["pids"] = sorted(set(res["P"]["pids"]) | set(descendants(p.pid)))
    p.send_signal(signal.SIGTERM)
    res["P"]["seconds"] = finish(p, 60)
    res["P"]["returncode"] = p.returncode
    res["P"]["left"] = [pid for pid in res["P"]["pids"] + [p.pid] if running(pid)]
    res["P"]["lock_left"] = os.path.exists(os.path.join(p_out, LOCK_NAME))
    res["P"]["last_checkpoint"] = read(os.path.join(p_out, "last_checkpoint")).strip()
    stops = re.findall(r"Stopping training after iteration (\d+)", read(res["P"]["log"]))
    res["P"]["stops"] = stops
    last = int(stops[0]) if stops else -1

    # 3. Resume P, the uninterrupted reference R and K (rank 0 SIGKILLed), all at once.
    b = start(launcher(TRAIN_NET, "--resume", *_train_args(digits_dir, p_out, path("resumed"))), res["B"]["log"])
    r = start(launcher(TRAIN_NET, *_train_args(digits_dir, path("reference"), path("full"))), res["R"]["log"])
    k_out = path("killed")
    k = start(launcher(TRAIN_NET, *_train_args(digits_dir, k_out, path("k"), **{"model.step_seconds": 0.2})),
              res["K"]["log"])
    wait_for(lambda: _iterations_seen(res["K"]["log"]), 150, "K's first iteration", k, res["K"]["log"])
    k_ranks = {rank_of(pid): pid for pid in descendants(k.pid) if os.path.exists(f"/proc/{pid}")}
    os.kill(k_ranks[0], signal.SIGKILL)
    res["K"]["seconds"] = finish(k, 60)
    res["K"]["returncode"] = k.returncode
    res["K"]["ranks"] = k_ranks
    res["K"]["left"] = [pid for pid in k_ranks.values() if running(pid)]
    res["K"]["lock"] = json.loads(read(os.path.join(k_out, LOCK_NAME)))
    res["K"]["out"] = k_out
    for name, proc in (("B", b), ("R", r)):
        finish(proc, 240)
        res[name]["returncode"] = proc.returncode
    # 4. The restarted runs, once K has ended and B and R are done: five two-rank launches at
    # once on two cores made OneFlow's control plane time out now and then ("Machine 1 lost"),
    # an extra failure these two runs would count as a restart.
    x = start(launcher("--max-restarts", "2", TRAIN_NET, *_train_args(digits_dir, path("restarted"), path("x"), **{
        "model.kill_on_rank": 1, "model.kill_at_step": KILLED_AT, "model.kill_marker": path("x.killed")})),
        res["X"]["log"])
    d = start(launcher("--max-restarts", "2", TRAIN_NET, *_train_args(digits_dir, path("doomed"), path("d"), **{
        "model.fail_on_rank": 1, "model.fail_at_step": 3})), res["D"]["log"])
    for name, proc in (("X", x), ("D", d)):
        finish(proc, 240)
        res[name]["returncode"] = proc.returncode
    res["X"]["out"], res["D"]["out"] = path("restarted"), path("doomed")
    res["P"].update(out=p_out, last=last)
    res["losses"] = {name: {rank: read(path(f"{name}.rank{rank}")).split() for rank in (0, 1)}
                     for name in ("cut", "resumed", "full", "x")}
    return res


def test_a_second_run_into_a_live_runs_output_dir_is_refused_naming_the_holder(runs):
    s, p = runs["S"], runs["P"]
    output = read(s["log"])
    assert s["returncode"] != 0, output[-3000:]
    holder = p["lock"]
    assert holder["pid"] == p["rank0"]  # rank 0 holds the lock
    assert f"belongs to another run (it is running): pid {holder['pid']} on host {holder['host']}" in output
    assert "train.output_dir=/a/new/dir" in output
    # refused before training (that every rank refuses by itself: tests/utils/test_run_lock.py)
    assert "OutputDirInUse" in output and "iter: " not in output
    # P's files are untouched: its config (S's seed would show), its lock, its log
    assert p["config_after_S"] == p["config"] and p["lock_after_S"] == holder
    log = read(os.path.join(p["out"], "log.txt"))
    assert "train.seed=4321" not in log and "-> 4321" not in log  # S's command line / settings diff


def test_sigterm_to_the_launcher_saves_one_checkpoint_and_leaves_no_process(runs):
    p = runs["P"]
    output = read(p["log"])
    assert p["returncode"] == 0, output[-3000:]
    assert p["seconds"] < 60 and p["left"] == []
    assert p["stops"], f"P ended before it was signalled: S took {runs['S']['seconds']:.0f} s to be refused"
    assert len(p["stops"]) == 2 and len(set(p["stops"])) == 1, p["stops"]  # both ranks, one iteration
    last = p["last"]
    # An iteration where the ranks compare notes, after the signal and well before the end. The
    # log the test reads when it signals trails the ranks (up to a log period under load, and
    # the test runs beside another worker), so the first agreement point the ranks reach after
    # the signal may be the one after the next the log suggests: allow two periods.
    assert (last + 1) % 10 == 0 and p["signalled_after"] <= last < p["signalled_after"] + 21 and last < ITERS - 1
    assert p["last_checkpoint"] == f"model_{last:07d}"
    assert not p["lock_left"]  # released on the way out


def test_resume_after_the_launcher_was_signalled_matches_the_uninterrupted_run(runs):
    for name in ("B", "R"):
        assert runs[name]["returncode"] == 0, read(runs[name]["log"])[-3000:]
    last = runs["P"]["last"]
    assert f"next iteration {last + 1}" in read(runs["B"]["log"])
    losses = runs["losses"]
    for rank in (0, 1):
        full = losses["full"][rank]
        assert len(full) == ITERS
        assert losses["cut"][rank] == full[:last + 1], f"rank {rank} before the stop"
        assert losses["resumed"][rank] == full[last + 1:], f"rank {rank} after resuming"


def test_a_sigkilled_rank_ends_the_launch_within_seconds_and_its_lock_is_taken_over(runs):
    k = runs["K"]
    output = read(k["log"])
    assert k["returncode"] == 128 + signal.SIGKILL, output[-3000:]
    assert k["seconds"] < KILL_GRACE_SECONDS + 5 and k["left"] == []
    # rank 0 died holding the output directory: the next run on this host takes it over
    assert k["lock"]["pid"] == k["ranks"][0]
    lock = RunLock(k["out"])
    with recorded_warnings("libai.utils.run_lock") as warnings:
        lock.acquire()
    lock.release()
    assert lock.taken_over is not None and lock.taken_over.pid == k["ranks"][0]
    assert len(warnings) == 1 and "Taking over" in warnings[0] and f"pid {k['ranks'][0]} on host" in warnings[0]


def test_a_sigkilled_rank_is_restarted_from_the_last_checkpoint_and_the_run_ends_as_the_uninterrupted_one(runs):
    x = runs["X"]
    output = read(x["log"])
    assert x["returncode"] == 0, output[-3000:]
    assert output.count("libai.launch: restart 1 of 2: rank 1 killed by SIGKILL (status 137)") == 1, output[-3000:]
    assert "restart 2 of" not in output
    assert "Resumed from" in output and "next iteration 20" in output
    losses = runs["losses"]
    for rank in (0, 1):  # the attempt killed at 25, then the restart from model_0000019 to the end
        full, seen = losses["full"][rank], losses["x"][rank]
        redone = ITERS - 20
        assert seen[-redone:] == full[20:], f"rank {rank} after the restart"
        # rank 1 died in step 25's forward; rank 0 may have logged step 25's loss before it hung
        assert seen[:-redone] == full[:len(seen) - redone] and len(seen) - redone in (KILLED_AT, KILLED_AT + 1)
    # the logs of both attempts: every iteration once, in order
    metrics = [json.loads(line) for line in read(os.path.join(x["out"], "metrics.json")).splitlines()]
    assert [m["iteration"] for m in metrics] == list(range(ITERS))
    assert _iterations_seen(os.path.join(x["out"], "log.txt")) == list(range(ITERS))
    assert "Resumed from" in read(os.path.join(x["out"], "log.txt"))  # the second attempt appended
    restarts = read(os.path.join(x["out"], "restarts.log"))
    assert restarts.count("restart 1 of 2: rank 1 killed by SIGKILL") == 1 and "restart 2" not in restarts
    assert "newest checkpoint: model_0000019" in restarts and "last lines of rank 1's output" in restarts


def test_a_rank_that_fails_at_the_same_iteration_again_is_not_restarted_for_ever(runs):
    d = runs["D"]
    output = read(d["log"])
    assert d["returncode"] == 1, output[-3000:]
    # two attempts, not three (which rank the launcher sees end first in the second attempt is a
    # race: rank 1 failing, or rank 0 aborted by OneFlow when its peer vanished)
    assert output.count("libai.launch: restart 1 of 2: rank 1 exit status 1") == 1, output[-4000:]
    assert "restart 2 of 2" not in output
    assert "the failure is deterministic" in output and "after iteration 2" in output
    restarts = read(os.path.join(d["out"], "restarts.log"))
    assert restarts.count("restart 1 of 2") == 1 and "the failure is deterministic" in restarts
    assert "deliberate failure on rank 1 at step 3" in restarts  # the failed rank's last lines
