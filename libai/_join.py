"""A launched rank that waits for the others says so, and gives up after a join timeout.

OneFlow 0.9 meets its ranks inside ``import oneflow``: rank 0 starts a control server at
``MASTER_ADDR:MASTER_PORT`` and waits there, holding the interpreter lock, until every rank of
``WORLD_SIZE`` has connected; the other ranks connect to it (retrying every 10 s) and wait too.
A node that never starts (a typo in the address, a firewall, a machine that failed to boot)
leaves every other rank in that call for ever, silently. libai keeps OneFlow's rendezvous and
watches it from outside:

* before OneFlow loads (at ``import libai``), :func:`check_launch` reports at once an address
  that does not resolve and, on rank 0, a control port that something else already listens on;
* a rank other than 0 first waits for rank 0's port (:func:`wait_for_master`), saying what it
  waits for after :data:`FIRST_REPORT_SECONDS` and every :data:`REPORT_PERIOD_SECONDS`;
* around ``import oneflow`` (:func:`watch_rendezvous`, an import hook), a small forked process
  does the same while the import blocks, since no Python thread of the rank can run then.

After the join timeout (``LIBAI_JOIN_TIMEOUT`` seconds, default :data:`DEFAULT_JOIN_TIMEOUT` as
torchrun's rendezvous; ``python -m libai.launch --join-timeout S`` sets it) the rank ends with the
same message and a non-zero status (:data:`JOIN_TIMEOUT_STATUS` when it ends itself). Imports no
libai module: it runs before OneFlow loads, like :mod:`libai._runtime`.
"""
import importlib.util
import os
import select
import signal
import socket
import sys
import time
from typing import Any, Mapping, MutableMapping, Optional

__all__ = [
    "DEFAULT_JOIN_TIMEOUT", "JOIN_TIMEOUT_STATUS", "JOIN_TIMEOUT_VARIABLE", "BAD_LAUNCH_STATUS",
    "check_launch", "join_timeout", "resolve_problem", "port_problem", "wait_for_master",
    "watch_rendezvous", "who_is_awaited",
]

JOIN_TIMEOUT_VARIABLE = "LIBAI_JOIN_TIMEOUT"
DEFAULT_JOIN_TIMEOUT = 600.0
JOIN_TIMEOUT_STATUS = 124  # as coreutils' `timeout`
BAD_LAUNCH_STATUS = 2
FIRST_REPORT_SECONDS = 5.0
REPORT_PERIOD_SECONDS = 30.0
# Written by libai.launch for better messages (OneFlow's launcher does not set them).
NODES_VARIABLES = ("LIBAI_NNODES", "LIBAI_NODE_RANK", "LIBAI_NPROC_PER_NODE")
_STARTED = time.monotonic()


def join_timeout(environ: Optional[Mapping[str, str]] = None) -> float:
    """``LIBAI_JOIN_TIMEOUT`` in seconds (default 600); a bad value is an error naming it."""
    env = os.environ if environ is None else environ
    raw = env.get(JOIN_TIMEOUT_VARIABLE, "")
    if not raw.strip():
        return DEFAULT_JOIN_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{JOIN_TIMEOUT_VARIABLE}={raw!r} must be a number of seconds above 0 (e.g. 600)")
    return value


def resolve_problem(addr: str) -> Optional[str]:
    """Why ``addr`` cannot be used as the master address, or ``None``."""
    try:
        socket.getaddrinfo(addr, None)
    except (socket.gaierror, UnicodeError) as e:
        return (f"the master address {addr!r} does not resolve ({e}): pass --master_addr with node 0's "
                "IP address or a host name every node can resolve")
    return None


def port_problem(port: int) -> Optional[str]:
    """Why rank 0 cannot listen on ``port`` on this machine, or ``None``. Binds with
    ``SO_REUSEADDR`` like OneFlow's server, so a port in TIME_WAIT is not taken for busy."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError as e:
            return (f"port {port} (--master_port) is already in use on this machine ({e.strerror}): "
                    "another launch or program listens there; pick a free port for every node's "
                    "--master_port")
    return None


def _launched(env: Mapping[str, str]) -> bool:
    return all(k in env for k in ("RANK", "MASTER_ADDR", "MASTER_PORT")) and int(env.get("WORLD_SIZE", "1")) > 1


def _ranks(first: int, last: int) -> str:
    return f"rank {first}" if first == last else f"ranks {first}-{last}"


def who_is_awaited(env: Mapping[str, str]) -> str:
    """``"rank 0 (node 0 of 2) waits for node 1 (rank 1) ... at 127.0.0.1:29500"``-like text."""
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    where = f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
    nnodes, node, per_node = (env.get(k) for k in NODES_VARIABLES)
    me = f"rank {rank} of {world}" + (f" (node {node} of {nnodes})" if nnodes and node else "")
    if rank != 0:
        return f"{me} waits for rank 0 (node 0) and every other rank to meet at {where}"
    if nnodes and per_node and int(nnodes) > 1:
        others = ", ".join(str(n) for n in range(1, int(nnodes)))
        return (f"{me} waits for node(s) {others} ({_ranks(int(per_node), world - 1)}) to connect to its "
                f"control server at {where}")
    return f"{me} waits for {_ranks(1, world - 1)} to connect to its control server at {where}"


def _give_up_text(env: Mapping[str, str], timeout: float) -> str:
    nnodes = env.get("LIBAI_NNODES") or "N"
    return (f"libai: {who_is_awaited(env)}: they did not all join within the join timeout of {timeout:g} s; "
            f"giving up. Check that every node's launcher was started with --nnodes {nnodes} "
            f"--master_addr {env['MASTER_ADDR']} --master_port {env['MASTER_PORT']} and its own --node_rank, "
            f"that {env['MASTER_ADDR']} is reachable from every node and that no firewall blocks the port "
            f"(wait longer: {JOIN_TIMEOUT_VARIABLE} or libai.launch --join-timeout)")


def _say(text: str) -> None:
    try:
        os.write(2, (text + "\n").encode())
    except OSError:
        pass


def _mark_join_failure(env: Mapping[str, str], text: str) -> None:
    """Tell libai.launch (through its run file) that this rank gave up joining: no restart."""
    run_file = env.get("LIBAI_LAUNCH_RUN_FILE")
    if run_file:
        try:
            with open(run_file + ".join", "w") as f:
                f.write(text)
        except OSError:
            pass


def check_launch(environ: Optional[Mapping[str, str]] = None) -> None:
    """In a launched rank: exit at once (status 2) with a message if the master address does not
    resolve or, on rank 0, its port is taken. Nothing outside a multi-process launch."""
    env = os.environ if environ is None else environ
    if not _launched(env) or "oneflow" in sys.modules:
        return
    problem = resolve_problem(env["MASTER_ADDR"])
    if problem is None and env["RANK"] == "0":
        problem = port_problem(int(env["MASTER_PORT"]))
    if problem:
        _say(f"libai: rank {env['RANK']}: {problem}")
        sys.exit(BAD_LAUNCH_STATUS)


def wait_for_master(environ: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> float:
    """On a launched rank other than 0: wait until rank 0's control port accepts connections,
    reporting what it waits for, and exit with :data:`JOIN_TIMEOUT_STATUS` after the join
    timeout. Polling first also spares OneFlow's first connection a 10 s retry when rank 0 is a
    moment late. Returns the seconds waited."""
    env = os.environ if environ is None else environ
    if not _launched(env) or env["RANK"] == "0" or "oneflow" in sys.modules:
        return 0.0
    timeout = join_timeout(env) if timeout is None else timeout
    addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    start, next_report = time.monotonic(), time.monotonic() + FIRST_REPORT_SECONDS
    while True:
        try:
            socket.create_connection((addr, port), timeout=1.0).close()
            return time.monotonic() - start
        except OSError:
            pass
        now = time.monotonic()
        if now - start >= timeout:
            text = _give_up_text(env, timeout)
            _say(text)
            _mark_join_failure(env, text)
            sys.exit(JOIN_TIMEOUT_STATUS)
        if now >= next_report:
            _say(f"libai: {who_is_awaited(env)}; nothing listens there yet "
                 f"({now - start:.0f} s of the {timeout:g} s join timeout)")
            next_report = now + REPORT_PERIOD_SECONDS
        time.sleep(0.05)


def _watch(read_fd: int, parent: int, env: Mapping[str, str], timeout: float, started: float) -> None:
    """The forked watcher: report until the pipe closes (OneFlow met, or the rank died); after
    the timeout, the message, then SIGTERM (SIGKILL 3 s later) to the rank."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
        signal.signal(sig, signal.SIG_DFL)
    next_report = started + FIRST_REPORT_SECONDS
    while True:
        now = time.monotonic()
        if now - started >= timeout:
            text = _give_up_text(env, timeout)
            _say(text)
            _mark_join_failure(env, text)
            os.kill(parent, signal.SIGTERM)
            if not select.select([read_fd], [], [], 3.0)[0]:
                os.kill(parent, signal.SIGKILL)
            return
        if now >= next_report:
            _say(f"libai: {who_is_awaited(env)} ({now - started:.0f} s of the {timeout:g} s join timeout)")
            next_report = now + REPORT_PERIOD_SECONDS
        wait = max(0.0, min(next_report, started + timeout) - time.monotonic())
        if select.select([read_fd], [], [], wait)[0]:
            return  # EOF: the import returned, or the rank ended


def _watched_exec(loader: Any, env: Mapping[str, str], timeout: float) -> Any:
    original = loader.exec_module

    def exec_module(module: Any) -> None:
        loader.exec_module = original
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the watcher
            os.close(write_fd)
            try:
                _watch(read_fd, os.getppid(), env, timeout, _STARTED)
            finally:
                os._exit(0)
        os.close(read_fd)
        try:
            original(module)
        finally:
            os.close(write_fd)
            os.waitpid(pid, 0)

    return exec_module


class _RendezvousFinder:
    """A ``sys.meta_path`` entry that finds nothing itself: on the first ``import oneflow`` it
    wraps OneFlow's loader so that the import runs under a watcher, then removes itself."""

    def __init__(self, env: Mapping[str, str], timeout: float) -> None:
        self.env, self.timeout = env, timeout

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "oneflow":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader.exec_module = _watched_exec(spec.loader, self.env, self.timeout)
        return spec


def watch_rendezvous(environ: Optional[MutableMapping[str, str]] = None) -> bool:
    """In a launched rank whose OneFlow is not loaded yet, watch the coming ``import oneflow``
    (see the module docstring). Returns whether the watch was installed."""
    env = os.environ if environ is None else environ
    if not _launched(env) or "oneflow" in sys.modules or not hasattr(os, "fork"):
        return False
    if any(isinstance(f, _RendezvousFinder) for f in sys.meta_path):
        return True
    sys.meta_path.insert(0, _RendezvousFinder(dict(env), join_timeout(env)))
    return True
