"""``python -m libai.launch``: OneFlow's launcher, plus a run that owns its processes.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file CFG [key=value ...]

Same flags as ``python -m oneflow.distributed.launch`` (they are OneFlow's own parser, read
from the installed OneFlow), and each rank gets the environment OneFlow's launcher gives it
(``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``, ``GLOG_log_dir``,
``OMP_NUM_THREADS=1`` when unset): the ranks meet through OneFlow's own rendezvous, unchanged.
What this launcher adds, and why:

* **Signals reach the ranks.** SIGTERM, SIGINT and SIGUSR1 sent to the launcher (what a
  scheduler or Kubernetes sends to the command it started; Ctrl-C) are forwarded to every rank;
  libai's :class:`~libai.engine.hooks.PreemptionHandler` then stops all ranks at one iteration
  and saves one checkpoint. The launcher waits for them and exits 0 when they all saved and
  exited cleanly (OneFlow's launcher exits 1 at once and leaves its ranks running, orphaned). A
  second signal while they save ends them with SIGKILL.
* **A failed rank ends the run.** When a rank exits with an error, the others get SIGTERM and,
  after :data:`KILL_GRACE_SECONDS` (they are usually stuck in a collective with the dead rank),
  SIGKILL; the launcher exits with the failed rank's status (128 + N for a rank killed by
  signal N, as shells report it).
* **No orphans.** Each rank starts in a process group of its own (so a terminal's Ctrl-C reaches
  the launcher once, instead of every rank twice) with ``PR_SET_PDEATHSIG`` = SIGKILL (Linux,
  ``prctl`` through ctypes): if the launcher dies, even by SIGKILL, the kernel kills its ranks.
  Whatever ends the launcher otherwise, it kills what is left of each rank's process group
  (the rank and its data-loader workers) on the way out.
"""
import ctypes
import ctypes.util
import importlib.util
import os
import signal
import subprocess
import sys
import time
from argparse import Namespace
from types import FrameType, ModuleType
from typing import IO, Dict, List, Optional, Sequence

__all__ = ["FORWARDED_SIGNALS", "KILL_GRACE_SECONDS", "main", "parse_args", "rank_environment", "rank_command"]

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)
KILL_GRACE_SECONDS = 5.0
POLL_SECONDS = 0.2
_PR_SET_PDEATHSIG = 1


def oneflow_launch_path() -> str:
    """Where the installed OneFlow's ``oneflow/distributed/launch.py`` is, found without
    importing the ``oneflow`` package (about a CPU-second of loading that a program which only
    starts processes does not need)."""
    spec = importlib.util.find_spec("oneflow")
    if spec is None or not spec.origin:
        raise ModuleNotFoundError("libai.launch needs OneFlow: pip install oneflow")
    return os.path.join(os.path.dirname(spec.origin), "distributed", "launch.py")


def oneflow_launch_module() -> ModuleType:
    """OneFlow's ``oneflow/distributed/launch.py``, loaded on its own: its parser is ours, and
    the launcher does not pay for (or start) a OneFlow runtime by importing the package."""
    path = oneflow_launch_path()
    module_spec = importlib.util.spec_from_file_location("_oneflow_distributed_launch", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def parse_args(argv: Optional[Sequence[str]] = None) -> Namespace:
    """The command line, read by OneFlow's own launch parser (same flags, same defaults)."""
    parse = oneflow_launch_module().parse_args
    saved = sys.argv
    sys.argv = ["python -m libai.launch", *(sys.argv[1:] if argv is None else argv)]
    try:
        return parse()
    finally:
        sys.argv = saved


def rank_environment(args: Namespace, local_rank: int, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment ``oneflow.distributed.launch`` gives local rank ``local_rank``."""
    env = dict(os.environ if base is None else base)
    env["MASTER_ADDR"] = args.master_addr
    env["MASTER_PORT"] = str(args.master_port)
    env["WORLD_SIZE"] = str(args.nproc_per_node * args.nnodes)
    if "OMP_NUM_THREADS" not in env and args.nproc_per_node > 1:
        env["OMP_NUM_THREADS"] = "1"
    env["RANK"] = str(args.nproc_per_node * args.node_rank + local_rank)
    env["LOCAL_RANK"] = str(local_rank)
    env["GLOG_log_dir"] = os.path.join(os.getcwd(), args.logdir, f"local_rank_{local_rank}")
    return env


def rank_command(args: Namespace) -> List[str]:
    """The command each rank runs, as ``oneflow.distributed.launch`` builds it."""
    if args.no_python and args.module:
        raise ValueError("Don't use both the '--no_python' flag and the '--module' flag at the same time.")
    cmd = [] if args.no_python else [sys.executable, "-u", *(["-m"] if args.module else [])]
    return [*cmd, args.training_script, *args.training_script_args]


def _die_with_parent() -> None:
    """Run in each rank between fork and exec: own process group, SIGKILL when the launcher dies."""
    launcher = os.getppid()
    os.setsid()
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != launcher:  # the launcher died before prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


def _load_libc() -> Optional[ctypes.CDLL]:
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


_LIBC = _load_libc()


def _say(message: str) -> None:
    """A line on stderr; a closed stderr must not turn a clean stop into a kill."""
    try:
        print(message, file=sys.stderr, flush=True)
    except OSError:
        pass


def exit_status(returncode: int) -> int:
    """A child's return code as a shell reports it (``-9`` -> ``137``)."""
    return 128 - returncode if returncode < 0 else returncode


class Ranks:
    """The ranks this launcher started, and how to signal, stop and reap them."""

    def __init__(self, procs: List[subprocess.Popen]) -> None:
        self.procs = procs

    def alive(self) -> List[subprocess.Popen]:
        return [p for p in self.procs if p.poll() is None]

    def send(self, sig: int) -> None:
        """``sig`` to each live rank process (not its data-loader workers, which the rank owns)."""
        for proc in self.alive():
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                pass

    def kill_groups(self) -> None:
        """SIGKILL to every rank's process group: the rank and anything it started."""
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for proc in self.procs:
            proc.wait()


def start_ranks(args: Namespace, ranks: Ranks, files: List[IO]) -> None:
    """Start this node's ranks into ``ranks`` as ``oneflow.distributed.launch`` would, each in its
    own process group and dying with the launcher; the log files it opens go to ``files``."""
    if args.master_port is None or not 0 <= args.master_port < 2 ** 16:
        raise ValueError(f"--master_port {args.master_port} must be an integer between 0 and 65535")
    if args.redirect_stdout_and_stderr and os.path.exists(args.logdir) and not os.path.isdir(args.logdir):
        raise ValueError("argument --logdir must be a path to a directory.")
    if "OMP_NUM_THREADS" not in os.environ and args.nproc_per_node > 1:
        _say("libai.launch: OMP_NUM_THREADS=1 for each rank (as oneflow.distributed.launch); "
             "set it to tune")
    cmd = rank_command(args)
    for local_rank in range(args.nproc_per_node):
        env = rank_environment(args, local_rank)
        out = err = None
        if args.redirect_stdout_and_stderr:
            os.makedirs(env["GLOG_log_dir"], exist_ok=True)
            out = open(os.path.join(env["GLOG_log_dir"], "stdout"), "w")
            err = open(os.path.join(env["GLOG_log_dir"], "stderr"), "w")
            files += [out, err]
        ranks.procs.append(subprocess.Popen(cmd, env=env, stdout=out, stderr=err, preexec_fn=_die_with_parent))


class Supervisor:
    """Watches the ranks: forwards signals, ends the run when one fails, picks the exit status."""

    def __init__(self, ranks: Ranks) -> None:
        self.ranks = ranks
        self.signals_received = 0
        self.failure: Optional[int] = None
        self.kill_at: Optional[float] = None

    def on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        self.signals_received += 1
        name = signal.Signals(signum).name
        if self.signals_received == 1:
            _say(f"libai.launch: received {name}; forwarded to every rank, waiting for them to save "
                 "a checkpoint and exit (send it again to kill them now)")
            self.ranks.send(signum)
        else:
            _say(f"libai.launch: received {name} again; killing every rank")
            self.failure = self.failure or 128 + signum
            self.kill_at = time.monotonic()

    def _on_rank_failed(self, proc: subprocess.Popen) -> None:
        self.failure = exit_status(proc.returncode)
        _say(f"libai.launch: rank process {proc.pid} exited with status {self.failure}; ending the "
             f"other ranks (SIGKILL after {KILL_GRACE_SECONDS:g} s)")
        self.ranks.send(signal.SIGTERM)
        self.kill_at = time.monotonic() + KILL_GRACE_SECONDS

    def run(self) -> int:
        """Wait until every rank has exited; returns the launcher's exit status."""
        while True:
            for proc in self.ranks.procs:
                if self.failure is None and proc.poll() not in (None, 0):
                    self._on_rank_failed(proc)
            if not self.ranks.alive():
                break
            if self.kill_at is not None and time.monotonic() >= self.kill_at:
                self.ranks.kill_groups()
                if self.failure is None:
                    self.failure = 128 + int(signal.SIGKILL)
                break
            time.sleep(POLL_SECONDS)
        return self.failure or 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the launch described by ``argv`` (default: the command line); returns the exit status."""
    args = parse_args(argv)
    ranks = Ranks([])
    supervisor = Supervisor(ranks)
    # Handlers first: a signal that arrives while the ranks start is forwarded to those started.
    previous = {sig: signal.signal(sig, supervisor.on_signal) for sig in FORWARDED_SIGNALS}
    files: List[IO] = []
    try:
        start_ranks(args, ranks, files)
        return supervisor.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        ranks.kill_groups()  # a rank's leftover workers, or every rank if the launcher itself failed
        for f in files:
            f.close()


if __name__ == "__main__":
    sys.exit(main())
