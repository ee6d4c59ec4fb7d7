"""Helpers for tests that launch several OneFlow processes on one machine."""
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing uses right now, below the kernel's ephemeral range.

    A port the kernel hands out for ``bind(0)`` comes from the range it also gives outgoing
    connections their source ports from: with several launches at once (the suite's workers),
    one launch's ranks connecting to each other could take the port another launch was just told
    was free, and that launch's ranks then waited for a rendezvous that never came (seen once in
    the suite: a run-lock test's two ranks hung until the test's 120 s timeout). Below the
    range only another explicit choice can take it, and the choice is checked by binding it.
    """
    low = _ephemeral_low()
    for _ in range(100):
        # the system's randomness: a test that seeds `random` must not make workers agree
        port = random.SystemRandom().randrange(max(1024, low - 12000), low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # a crowded machine
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    """The first port of the kernel's range for outgoing connections (Linux; 32768 elsewhere,
    the Linux default and below the range of the BSDs and Windows)."""
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _launcher_command(
    script: str, nproc: int, args: Sequence[str], nnodes: int, node_rank: int, port: int
) -> List[str]:
    """OneFlow's launcher with ``script``'s ranks. Its file is run directly: the program
    ``python -m oneflow.distributed.launch`` runs, without importing the ``oneflow`` package
    first (the launcher itself uses only the standard library), which saves about a CPU-second
    per launch, some 40 s of the test suite on two cores."""
    from libai.launch import oneflow_launch_path

    return [
        sys.executable, oneflow_launch_path(),
        "--nproc_per_node", str(nproc),
        "--nnodes", str(nnodes), "--node_rank", str(node_rank),
        "--master_addr", "127.0.0.1", "--master_port", str(port),
        script, *args,
    ]


def _wait_all(
    cmds: Sequence[List[str]], timeout: float, env: Optional[Dict[str, str]], cwd: Optional[str]
) -> List[subprocess.CompletedProcess]:
    """Start every command at once (each in its own process group) and wait for all of them
    within one shared ``timeout``; on expiry every group still running is killed and
    ``subprocess.TimeoutExpired`` is raised."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=full_env, cwd=cwd, start_new_session=True)
        for cmd in cmds
    ]
    deadline = time.monotonic() + timeout
    outputs: List[str] = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            outputs.append(out)
    except subprocess.TimeoutExpired:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        raise
    return [subprocess.CompletedProcess(cmd, p.returncode, out, None)
            for cmd, p, out in zip(cmds, procs, outputs)]


def launch(
    script: str,
    nproc: int,
    args: Sequence[str] = (),
    timeout: float = 300,
    env: Optional[Dict[str, str]] = None,
    cwd: Optional[str] = None,
) -> subprocess.CompletedProcess:
    """Run ``script`` under ``python -m oneflow.distributed.launch`` (one node) and wait for it.

    A fresh master port is chosen so that concurrent launches do not collide. Raises
    ``subprocess.TimeoutExpired`` (after killing the process group) when it hangs. Several
    nodes: :func:`launch_nodes`.
    """
    cmd = _launcher_command(script, nproc, args, nnodes=1, node_rank=0, port=free_port())
    return _wait_all([cmd], timeout, env, cwd)[0]


def start_launch(
    script: str,
    nproc: int,
    args: Sequence[str] = (),
    env: Optional[Dict[str, str]] = None,
    cwd: Optional[str] = None,
) -> subprocess.Popen:
    """Start ``script`` under ``python -m oneflow.distributed.launch`` (one node, a fresh port)
    without waiting: for tests that act on a running launch (signal its ranks, read its output
    as it comes). Output is text, stderr merged into stdout; the launcher leads its own process
    group, so ``os.killpg(proc.pid, SIGKILL)`` ends it and its ranks."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    cmd = _launcher_command(script, nproc, args, nnodes=1, node_rank=0, port=free_port())
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=full_env, cwd=cwd, start_new_session=True)


def child_pids(pid: int) -> List[int]:
    """The direct children of process ``pid`` (Linux ``/proc``): a launcher's ranks."""
    children: List[int] = []
    task_dir = f"/proc/{pid}/task"
    for task in os.listdir(task_dir):
        try:
            with open(os.path.join(task_dir, task, "children")) as f:
                children.extend(int(c) for c in f.read().split())
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return sorted(set(children))


def launch_nodes(
    script: str,
    nnodes: int,
    nproc_per_node: int = 1,
    args: Sequence[str] = (),
    timeout: float = 300,
    env: Optional[Dict[str, str]] = None,
    cwd: Optional[str] = None,
) -> List[subprocess.CompletedProcess]:
    """Play ``nnodes`` machines on this one: one launcher per node rank, all started together
    and meeting at 127.0.0.1 on a fresh port, as a user would in several terminals. Returns
    each launcher's result, in node order; raises ``subprocess.TimeoutExpired`` (after killing
    them all) when they do not all finish within ``timeout``."""
    port = free_port()
    cmds = [_launcher_command(script, nproc_per_node, args, nnodes, rank, port)
            for rank in range(nnodes)]
    return _wait_all(cmds, timeout, env, cwd)


def write_record(line: str) -> None:
    """Print one record line from a rank in a single write to stdout.

    ``print`` writes the text and its newline separately, so another rank's output (a log line)
    can land between them and glue itself to the record's last value. One ``os.write`` of a line
    shorter than the pipe's atomic size (4096 bytes on Linux) cannot be split that way.
    """
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (line.rstrip("\n") + "\n").encode())


def tagged_lines(output: str, tag: str = "RESULT", ranks: Optional[int] = None) -> List[str]:
    """The records ``"<tag> ..."`` that processes printed to one shared pipe, sorted.

    Ranks of a launch share the launcher's stdout, and ``print`` writes its text and its newline
    separately, so one rank's record can land right after another's on the same line
    (``"RESULT rank=0 ...RESULT rank=1 ...\\n\\n"``). A record runs from its tag to the next
    tag or the end of the line.

    With ``ranks``, the records must say ``rank=<r>`` and there must be exactly one from each
    rank ``0 .. ranks - 1`` (see :func:`rank_records`): a rank that printed nothing fails here
    instead of leaving a comparison that only looks at the ranks that did.
    """
    lines = sorted(m.rstrip() for m in re.findall(rf"{re.escape(tag)} .*?(?={re.escape(tag)} |\n|$)", output))
    if ranks is not None:
        rank_records(output, ranks, tag)
    return lines


def rank_records(output: str, ranks: int, tag: str = "RESULT") -> Dict[int, Dict[str, str]]:
    """One ``"<tag> rank=<r> key=value ..."`` record from every rank, parsed: ``{r: {key: value}}``.

    Raises ``AssertionError`` naming the ranks that printed no record, printed two, or printed
    one without ``rank=``, with the end of ``output`` (where a silent rank's error usually is).
    Values are the text after ``=`` up to the next space.
    """
    found: Dict[int, List[Dict[str, str]]] = {}
    for line in tagged_lines(output, tag):
        fields = dict(item.split("=", 1) for item in line[len(tag):].split() if "=" in item)
        if "rank" not in fields or not fields["rank"].isdigit():
            raise AssertionError(f"a {tag} record without rank=<number>: {line!r}")
        found.setdefault(int(fields["rank"]), []).append(fields)
    missing = [r for r in range(ranks) if r not in found]
    repeated = [r for r, recs in found.items() if len(recs) > 1]
    unexpected = [r for r in found if not 0 <= r < ranks]
    if missing or repeated or unexpected:
        raise AssertionError(
            f"expected one {tag} record from each of ranks 0..{ranks - 1}; missing from {missing}, "
            f"repeated by {repeated}, from unknown ranks {unexpected}. Output ends:\n{output[-3000:]}"
        )
    return {r: recs[0] for r, recs in sorted(found.items())}


def runner_description(trainer: Any) -> str:
    """What ran a trainer's steps, for tests that must prove Graph mode really ran:
    ``"GraphTrainer(compiled=True)"`` when a static graph was compiled and called,
    otherwise the step runner's class name (``"EagerTrainer"``).

    Equal losses alone cannot tell Graph from Eager mode: both compute the same numbers.
    """
    runner = getattr(trainer, "_trainer", trainer)
    graph = getattr(runner, "graph", None)  # a GraphTrainer's compiled step (utils cannot import the engine)
    if graph is not None and hasattr(graph, "is_compiled"):
        return f"{type(runner).__name__}(compiled={bool(graph.is_compiled)})"
    return type(runner).__name__


COMPILED_GRAPH = "GraphTrainer(compiled=True)"


def run_retrying_segfaults(cmd: Sequence[str], retries: int = 1, **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, **kwargs)``, run again (up to ``retries`` times) only when the
    process died of SIGSEGV.

    OneFlow 0.9 occasionally segfaults in Graph mode (seen about once in 20–60 graph builds on
    a loaded 2-core machine, in code with no libai frames); a test of *our* behaviour should not
    fail on that. Any other failure, including a wrong result or a Python exception, is returned
    at once.
    """
    proc = subprocess.run(list(cmd), **kwargs)
    while proc.returncode == -signal.SIGSEGV and retries > 0:
        retries -= 1
        proc = subprocess.run(list(cmd), **kwargs)
    return proc
