"""A stop signal at any moment of a run ends it with a loadable ``last_checkpoint`` and exit 0.

One training of the MNIST project per phase, with loader workers (2, as the shipped recipes
have 4) and the probes of signal_probe.py, each signalled when its phase is under way:

=========  ==============================================  ====================================
phase      when                                            signal
=========  ==============================================  ====================================
startup    building its datasets (before training)         SIGINT to its process group (Ctrl-C)
data       workers loading the first training batch        SIGTERM to its process group
step       training steps (after iteration 2 was logged)   SIGINT to its process group
eval       an evaluation's workers loading                 SIGINT to its process group
save       saving a checkpoint                             SIGTERM to the process
=========  ==============================================  ====================================

The five run at once. Then two 2-rank runs, at once: one under ``python -m libai.launch``
whose launcher is signalled (SIGINT to its group) during an evaluation with workers, and one
under ``python -m oneflow.distributed.launch`` started from a script (so the launcher does not
lead its process group and cannot signal its ranks): SIGTERM to that launcher, which exits at
once, and the ranks learn of its death (``libai._runtime.stop_with_launcher``) and stop as a
SIGTERM stops them. Every run must leave no process behind and a checkpoint that loads.
"""
import os
import re
import signal
import subprocess
import sys
import time
from typing import Dict, List

import pytest

from libai.utils.checkpoint import Checkpointer
from libai.utils.testing import free_port
from mnist_helpers import REPO
from projects.MNIST.modeling.model import MNISTClassifier

CONFIG = os.path.join(REPO, "tests", "engine", "signal_probe_config.py")
TRAIN_NET = os.path.join(REPO, "tools", "train_net.py")


def overrides(digits: str, out: str, **extra) -> List[str]:
    base = {
        "train.output_dir": out,
        "dataloader.train.dataset.0.root": digits,
        "dataloader.test.0.dataset.root": digits,
        "train.train_epoch": 0, "train.train_iter": 400, "train.warmup_ratio": 0.0,
        "train.log_period": 1, "train.train_micro_batch_size": 16, "train.test_micro_batch_size": 16,
        "train.evaluation.eval_period": 100000, "train.evaluation.eval_iter": 4,
        "train.checkpointer.period": 100000,
    }
    base.update(extra)
    return [f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in base.items()]


def session_processes(sid: int) -> List[int]:
    """Live (not zombie) processes of session ``sid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry))
    return found


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def markers(prefix: str) -> List[str]:
    folder, name = os.path.split(prefix)
    return [f for f in os.listdir(folder) if f.startswith(name)]


class Run:
    """A process started in a new session, its log, and how to signal it in a phase."""

    def __init__(self, cmd: List[str], log: str) -> None:
        self.log = log
        with open(log, "w") as out:
            self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.signalled = False
        self.seconds = None

    def text(self) -> str:
        return read(self.log)

    def end(self) -> None:
        """Kill what is left of the session (after a failed test)."""
        for pid in session_processes(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()


def wait_all(runs: Dict[str, Run], ready, send, timeout: float) -> None:
    """Signal each run once ``ready(name)`` holds, then wait for all of them (and every process
    of their sessions) to end."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = False
        for name, run in runs.items():
            if not run.signalled and run.proc.poll() is None:
                if ready(name):
                    send(name)
                    run.signalled = True
                else:
                    pending = True
            if run.proc.poll() is None or session_processes(run.proc.pid):
                pending = True
        if not pending:
            return
        time.sleep(0.05)
    for run in runs.values():
        run.end()
    pytest.fail("runs did not end in time:\n" + "\n".join(f"{n}: {r.text()[-2000:]}" for n, r in runs.items()))


def load_last_checkpoint(out: str) -> int:
    """The iteration ``last_checkpoint`` names, after loading that checkpoint's model."""
    name = read(os.path.join(out, "last_checkpoint")).strip()
    assert re.fullmatch(r"model_\d{7}", name), name
    extra = Checkpointer(MNISTClassifier(), out).load(name, checkpointables=[])
    assert int(extra["iteration"]) == int(name.split("_")[1])
    return int(extra["iteration"])


SINGLE = {
    # name: (signal, to the group?, overrides, "ready" test)
    "startup": (signal.SIGINT, True, {"dataloader.train.dataset.0.init_seconds": 3.0}, "init"),
    "data": (signal.SIGTERM, True, {"dataloader.train.dataset.0.delay": 0.1}, "train"),
    "step": (signal.SIGINT, True, {}, "iter"),
    "eval": (signal.SIGINT, True, {"train.evaluation.eval_period": 3, "dataloader.test.0.dataset.delay": 0.05},
             "test"),
    "save": (signal.SIGTERM, False, {"train.checkpointer.period": 3, "model.save_seconds": 1.5}, "save"),
}


@pytest.fixture(scope="module")
def single(digits_dir, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("stop_signals"))
    runs: Dict[str, Run] = {}
    files: Dict[str, Dict[str, str]] = {}
    for name, (_, _, extra, _) in SINGLE.items():
        f = {kind: os.path.join(tmp, f"{name}.{kind}") for kind in ("init", "train", "test", "save")}
        files[name] = f
        args = overrides(digits_dir, os.path.join(tmp, name), **{
            "dataloader.train.dataset.0.init_marker": f["init"] if name == "startup" else "",
            "dataloader.train.dataset.0.marker": f["train"], "dataloader.test.0.dataset.marker": f["test"],
            "model.save_marker": f["save"], **extra})
        runs[name] = Run([sys.executable, TRAIN_NET, "--config-file", CONFIG, *args], os.path.join(tmp, name + ".log"))

    def ready(name: str) -> bool:
        kind = SINGLE[name][3]
        if kind == "iter":
            return "iter: 2/" in runs[name].text()
        path = files[name][kind]
        return os.path.exists(path) if kind in ("init", "save") else bool(markers(path + "."))

    def send(name: str) -> None:
        sig, group = SINGLE[name][:2]
        (os.killpg if group else os.kill)(runs[name].proc.pid, sig)

    try:
        wait_all(runs, ready, send, timeout=400)
    finally:
        for run in runs.values():
            if run.proc.poll() is None:
                run.end()
    return {name: dict(run=run, out=os.path.join(tmp, name)) for name, run in runs.items()}


@pytest.mark.parametrize("phase", list(SINGLE))
def test_a_signal_in_each_phase_of_a_one_process_run_saves_and_exits_0(single, phase):
    run, out = single[phase]["run"], single[phase]["out"]
    text = run.text()
    assert run.signalled, f"the {phase} phase never came:\n{text[-3000:]}"
    assert run.proc.returncode == 0, text[-3000:]
    assert "exited unexpectedly" not in text and "Traceback" not in text, text[-3000:]
    sig_name = SINGLE[phase][0].name
    stops = re.findall(r"Stopping training after iteration (\d+): received (\w+)", text)
    assert [s[1] for s in stops] == [sig_name], stops
    stopped = int(stops[0][0])
    assert load_last_checkpoint(out) == stopped
    if phase in ("startup", "data"):  # before the first step ended: the first step is saved
        assert stopped == 0
    if phase == "startup":
        assert f"Received {sig_name} while starting" in text
    if phase == "eval":  # the evaluation the signal interrupted ran to its end
        assert stopped >= 2 and "Evaluation results" in text.split("Stopping training")[0]
    if phase == "save":
        assert stopped >= 3  # the save at iteration 2 was in progress, the next step stops


# ------------------------------------------------------------------------------------------
# Two ranks: libai.launch signalled during an evaluation; oneflow's launcher dying.
# ------------------------------------------------------------------------------------------
def launch(module: str, digits: str, out: str, **extra) -> List[str]:
    return [sys.executable, "-m", module, "--nproc_per_node", "2", "--master_port", str(free_port()),
            TRAIN_NET, "--config-file", CONFIG, *overrides(digits, out, **extra)]


@pytest.fixture(scope="module")
def launched(digits_dir, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("stop_signals_launched"))
    test_marker = os.path.join(tmp, "eval.test")
    ours = launch("libai.launch", digits_dir, os.path.join(tmp, "ours"), **{
        "train.evaluation.eval_period": 3, "dataloader.test.0.dataset.delay": 0.05,
        "dataloader.test.0.dataset.marker": test_marker})
    theirs = launch("oneflow.distributed.launch", digits_dir, os.path.join(tmp, "theirs"),
                    **{"dataloader.train.dataset.0.delay": 0.01})
    script = os.path.join(tmp, "start.sh")
    with open(script, "w") as f:  # the launcher is this script's child, in the script's process group
        f.write("#!/bin/bash\n" + " ".join(f"'{a}'" for a in theirs) + " &\necho launcher=$!\nwait\n")
    runs = {"ours": Run(ours, os.path.join(tmp, "ours.log")),
            "theirs": Run(["bash", script], os.path.join(tmp, "theirs.log"))}
    info: Dict[str, object] = {}

    def ready(name: str) -> bool:
        if name == "ours":
            return bool(markers(test_marker + "."))
        return len(re.findall(r"iter: (\d+)/", runs[name].text())) >= 2

    def send(name: str) -> None:
        if name == "ours":
            os.killpg(runs[name].proc.pid, signal.SIGINT)
            return
        launcher = int(re.search(r"launcher=(\d+)", runs[name].text()).group(1))
        assert os.getpgid(launcher) != launcher  # not the leader of its process group
        info["ranks"] = [p for p in session_processes(runs[name].proc.pid) if p not in (launcher, runs[name].proc.pid)]
        os.kill(launcher, signal.SIGTERM)
        info["launcher_gone"] = _wait_gone(launcher)

    try:
        wait_all(runs, ready, send, timeout=300)
    finally:
        for run in runs.values():
            if run.proc.poll() is None or session_processes(run.proc.pid):
                run.end()
    return dict(runs=runs, info=info, out={n: os.path.join(tmp, n) for n in runs})


def _wait_gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_libai_launch_signalled_during_an_evaluation_with_workers_saves_one_checkpoint(launched):
    run, out = launched["runs"]["ours"], launched["out"]["ours"]
    text = run.text()
    assert run.proc.returncode == 0, text[-3000:]
    assert "exited unexpectedly" not in text and "Traceback" not in text, text[-3000:]
    stops = re.findall(r"Stopping training after iteration (\d+): received (\w+)", text)
    assert len(stops) == 2 and len(set(stops)) == 1 and stops[0][1] == "SIGINT", stops  # both ranks, one step
    assert load_last_checkpoint(out) == int(stops[0][0])


def test_ranks_of_oneflows_launcher_stop_and_save_when_it_dies(launched):
    run, out, info = launched["runs"]["theirs"], launched["out"]["theirs"], launched["info"]
    text = run.text()
    assert info.get("launcher_gone"), text[-3000:]
    assert "Main process received SIGTERM, exiting" in text  # OneFlow's launcher left at once
    assert len(info["ranks"]) >= 2
    stops = re.findall(r"Stopping training after iteration (\d+): received (\w+)", text)
    assert len(stops) == 2 and len(set(stops)) == 1 and stops[0][1] == "SIGTERM", text[-3000:]
    assert load_last_checkpoint(out) == int(stops[0][0])
    assert "Traceback" not in text, text[-3000:]


def test_import_libai_in_a_launched_rank_asks_for_sigterm_when_the_launcher_dies():
    """What makes the ranks of OneFlow's launcher stop (above); an unlaunched process and a
    rank of libai.launch (which set SIGKILL before exec) keep what they had."""
    code = ("import ctypes, os, signal, sys; import libai; v = ctypes.c_int(0); "
            "ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0); print(v.value)")
    launched = {**os.environ, "RANK": "1", "LOCAL_RANK": "1", "MASTER_PORT": "29999", "WORLD_SIZE": "1"}
    plain = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "MASTER_PORT")}
    got = {name: subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                                timeout=60).stdout.strip()
           for name, env in (("launched", launched), ("plain", plain))}
    assert got == {"launched": str(int(signal.SIGTERM)), "plain": "0"}, got
    preset = ("import ctypes, subprocess, sys; "
              "subprocess.run([sys.executable, '-c', %r], preexec_fn=lambda: ctypes.CDLL(None).prctl(1, 9, 0, 0, 0))"
              % code)
    out = subprocess.run([sys.executable, "-c", preset], cwd=REPO, env=launched, capture_output=True, text=True,
                         timeout=60).stdout.strip()
    assert out == str(int(signal.SIGKILL))
