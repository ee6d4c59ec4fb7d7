"""How ``vs_libai.py`` times a run: each output line is stamped by the parent's clock as it
arrives, the iteration and "Overall training speed" lines are read from it, and the peak memory
comes from a wrapper process; plus the machine's matmul peak of the same sitting."""
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Dict, Optional

from _vs_libai_setup import REPO, Engine

ITER_LINE = re.compile(r"\biter(?:ation)?: (\d+)/(\d+)")
OVERALL = re.compile(r"Overall training speed: (\d+) iterations in \S+ \(([\d.]+) s / it\)")


PEAK_WRAPPER = ("import resource, subprocess, sys\n"
                "code = subprocess.call(sys.argv[1:])\n"
                "print('PEAK_RSS_KB %d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True)\n"
                "sys.exit(code)\n")


@dataclass
class RunResult:
    ok: bool
    stamps: Dict[int, float]  # iteration -> seconds since the command started
    overall: Optional[float]
    peak_rss_mb: Optional[float]
    tail: str


def run(engine: Engine, config: str, nproc: int, out_dir: str, stop_at: Optional[int] = None,
        timeout: float = 1800) -> RunResult:
    env = {k: v for k, v in os.environ.items() if k not in engine.drop_env}
    env.update(engine.env)
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    train = [engine.entry, "--config-file", config, f"train.output_dir={out_dir}"]
    if nproc > 1:
        port = str(20000 + (os.getpid() * 7 + int(time.time())) % 20000)
        cmd = [engine.python, "-m", "oneflow.distributed.launch", "--nproc_per_node", str(nproc),
               "--master_port", port, *train]
    else:
        cmd = [engine.python, *train]
    cmd = [sys.executable, "-c", PEAK_WRAPPER, *cmd]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=out_dir if os.path.isdir(out_dir) else None,
                            start_new_session=True)
    stamps: Dict[int, float] = {}
    overall, peak, tail = None, None, []
    assert proc.stdout is not None
    finished_at: Optional[float] = None
    for line in _lines_until_exit(proc, lambda: finished_at):
        if line is None:  # training ended but the process has not exited in 30 s
            _kill_descendants(proc.pid)
            continue
        now = time.monotonic() - start
        if "Total training time" in line:
            finished_at = time.monotonic()
        tail = (tail + [line])[-40:]
        m = ITER_LINE.search(line)
        if m and "Starting" not in line:
            stamps.setdefault(int(m.group(1)), now)
            if stop_at is not None and int(m.group(1)) >= stop_at:
                os.killpg(proc.pid, 9)
                break
        m = OVERALL.search(line)
        if m:
            overall = float(m.group(2))
        if line.startswith("PEAK_RSS_KB"):
            peak = int(line.split()[1]) / 1024
        if now > timeout:
            os.killpg(proc.pid, 9)
            break
    code = proc.wait()
    ok = (code == 0 or stop_at is not None or finished_at is not None) and bool(stamps)
    return RunResult(ok, stamps, overall, peak, "".join(tail))


def _lines_until_exit(proc: subprocess.Popen, finished_at, grace: float = 30.0):
    """The lines of ``proc``'s output; ``None`` once, when training has ended (``finished_at()``
    is set) and no line came for ``grace`` seconds: a process that hangs at exit (seen with
    data-loader workers left waiting) is then ended without losing its timing lines."""
    import selectors

    fd = proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    hung_reported, pending = False, b""
    while True:
        if not sel.select(timeout=1.0):
            done = finished_at()
            if done is not None and not hung_reported and time.monotonic() - done > grace:
                hung_reported = True
                yield None
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(fd, 1 << 16)  # raw reads: a line is stamped when it arrives
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.decode("utf-8", "replace") + "\n"
    if pending:
        yield pending.decode("utf-8", "replace")


def _kill_descendants(pid: int) -> None:
    """SIGKILL every process below ``pid`` (not ``pid`` itself: the wrapper that reports the
    peak memory must live to reap them)."""
    import signal

    children = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children += [int(c) for c in f.read().split()]
    except OSError:
        return
    for child in children:
        _kill_descendants(child)
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass


def matmul_peak(python: str, env_changes: Dict[str, Optional[str]], n: int = 1024) -> Dict[str, float]:
    """GFLOP/s of an n x n fp32 product on one thread: NumPy, and OneFlow (best of 3 x 10)."""
    code = f"""
import time, json
import numpy as np
def best(f, reps=10):
    f(); b = 1e9
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps): f()
        b = min(b, (time.perf_counter() - t) / reps)
    return 2 * {n} ** 3 / b / 1e9
a = np.random.rand({n}, {n}).astype(np.float32); c = np.random.rand({n}, {n}).astype(np.float32)
r = dict(numpy=best(lambda: a @ c))
import sys; sys.path.insert(0, {REPO!r})
import libai, oneflow as flow
fa, fc = flow.tensor(a), flow.tensor(c)
r["oneflow"] = best(lambda: flow.matmul(fa, fc).numpy())
print("PEAK " + json.dumps(r))
"""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    return json.loads([x for x in out.splitlines() if x.startswith("PEAK ")][-1][5:])
