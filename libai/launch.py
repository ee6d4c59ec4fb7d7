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
* **Automatic restarts.** With ``--max-restarts N`` (or ``LIBAI_MAX_RESTARTS=N``), a rank that
  exits abnormally ends the attempt as above, then every rank starts again with ``--resume``
  (placed first among the training script's arguments) from the newest complete checkpoint,
  after a short back-off, at most N times; each restart is logged in the run's
  ``restarts.log``. A failure at the same place twice in a row is deterministic and ends the
  run (:mod:`libai.launch_restart`). A signal to the launcher never restarts anything.
* **A join timeout.** A bad ``--master_addr`` or a busy ``--master_port`` is reported before any
  rank starts; each rank says what it waits for while the others have not joined and gives up
  after ``--join-timeout`` seconds (``LIBAI_JOIN_TIMEOUT``, default 600; :mod:`libai._join`).
"""
import ctypes
import ctypes.util
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from argparse import ArgumentParser, Namespace
from types import FrameType, ModuleType
from typing import IO, Any, Deque, Dict, List, Optional, Sequence

from libai import _join
from libai import launch_restart as restart

__all__ = ["FORWARDED_SIGNALS", "KILL_GRACE_SECONDS", "Launch", "main", "parse_args", "rank_environment",
           "rank_command"]

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


def _env_number(name: str, default: float, kind: Any) -> Any:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise SystemExit(f"libai.launch: {name}={raw!r} must be a number ({kind.__name__})") from None


class _ParserWithLibaiFlags(ArgumentParser):
    """OneFlow's parser plus libai's own flags (added when it parses, after OneFlow's)."""

    def parse_args(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.add_argument("--max-restarts", "--max_restarts", dest="max_restarts", type=int,
                          default=_env_number(restart.MAX_RESTARTS_VARIABLE, 0, int),
                          help="restart every rank with --resume after a rank fails, at most this many "
                               "times (default: $LIBAI_MAX_RESTARTS or 0)")
        self.add_argument("--join-timeout", "--join_timeout", dest="join_timeout", type=float,
                          default=_env_number(_join.JOIN_TIMEOUT_VARIABLE, _join.DEFAULT_JOIN_TIMEOUT, float),
                          help="seconds each rank waits for all the others to join before giving up "
                               "(default: $LIBAI_JOIN_TIMEOUT or 600)")
        return super().parse_args(*args, **kwargs)


def parse_args(argv: Optional[Sequence[str]] = None) -> Namespace:
    """The command line, read by OneFlow's own launch parser (same flags, same defaults), plus
    ``--max-restarts`` and ``--join-timeout``."""
    module = oneflow_launch_module()
    module.ArgumentParser = _ParserWithLibaiFlags
    saved = sys.argv
    sys.argv = ["python -m libai.launch", *(sys.argv[1:] if argv is None else argv)]
    try:
        args = module.parse_args()
    finally:
        sys.argv = saved
    if args.max_restarts < 0 or not args.join_timeout > 0:
        raise SystemExit("libai.launch: --max-restarts must be 0 or more and --join-timeout above 0")
    return args


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
    # libai's own: the join timeout the ranks enforce (libai._join), and who the nodes are (messages)
    if getattr(args, "join_timeout", None) is not None:
        env[_join.JOIN_TIMEOUT_VARIABLE] = f"{args.join_timeout:g}"
    for name, value in zip(_join.NODES_VARIABLES, (args.nnodes, args.node_rank, args.nproc_per_node)):
        env[name] = str(value)
    return env


def rank_command(args: Namespace, resume: bool = False) -> List[str]:
    """The command each rank runs, as ``oneflow.distributed.launch`` builds it; with ``resume``
    (a restart) ``--resume`` comes first among the script's arguments."""
    if args.no_python and args.module:
        raise ValueError("Don't use both the '--no_python' flag and the '--module' flag at the same time.")
    cmd = [] if args.no_python else [sys.executable, "-u", *(["-m"] if args.module else [])]
    script_args = list(args.training_script_args)
    if resume and "--resume" not in script_args:
        script_args.insert(0, "--resume")
    return [*cmd, args.training_script, *script_args]


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
    """The ranks this launcher started, and how to signal, stop and reap them.

    Each rank has a thread that waits for it and notes the order in which the ranks end
    (:attr:`exit_order`): when one rank is killed, its peers often die a moment later (OneFlow
    aborts a process whose peer vanished), and polling every few tenths of a second would find
    them dead together and blame the lowest index, not the rank that failed first."""

    def __init__(self, procs: List[subprocess.Popen]) -> None:
        self.procs: List[subprocess.Popen] = []
        self.exit_order: List[int] = []  # indices into procs, in the order the ranks ended
        self._lock = threading.Lock()
        for proc in procs:
            self.add(proc)

    def add(self, proc: subprocess.Popen) -> None:
        """Take ``proc`` as the next rank and note when it ends."""
        index = len(self.procs)
        self.procs.append(proc)

        def wait() -> None:
            proc.wait()
            with self._lock:
                self.exit_order.append(index)

        threading.Thread(target=wait, name=f"libai-launch-rank{index}", daemon=True).start()

    def ended_in_order(self) -> List[int]:
        """The indices of the ranks that have ended, first to end first (a rank whose end its
        thread has not noted yet comes last)."""
        with self._lock:
            order = list(self.exit_order)
        return order + [i for i, proc in enumerate(self.procs) if i not in order and proc.poll() is not None]

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


def check_args(args: Namespace) -> Optional[str]:
    """What makes this launch impossible, said before any rank starts: a bad port, a log
    directory that is a file, an address that does not resolve, node 0's port already taken."""
    if args.master_port is None or not 0 <= args.master_port < 2 ** 16:
        raise ValueError(f"--master_port {args.master_port} must be an integer between 0 and 65535")
    if args.redirect_stdout_and_stderr and os.path.exists(args.logdir) and not os.path.isdir(args.logdir):
        raise ValueError("argument --logdir must be a path to a directory.")
    if args.nnodes * args.nproc_per_node <= 1:
        return None
    problem = _join.resolve_problem(args.master_addr)
    if problem is None and args.node_rank == 0:
        problem = _join.port_problem(args.master_port)
    return problem


def start_ranks(args: Namespace, ranks: Ranks, files: List[IO], resume: bool = False,
                extra_env: Optional[Dict[str, str]] = None, tails: Optional[List[Deque[bytes]]] = None) -> None:
    """Start this node's ranks into ``ranks`` as ``oneflow.distributed.launch`` would, each in its
    own process group and dying with the launcher; the log files it opens go to ``files``. With
    ``tails``, each rank's output passes through the launcher, which keeps its last lines there."""
    if "OMP_NUM_THREADS" not in os.environ and args.nproc_per_node > 1 and not resume:
        _say("libai.launch: OMP_NUM_THREADS=1 for each rank (as oneflow.distributed.launch); "
             "set it to tune")
    cmd = rank_command(args, resume)
    for local_rank in range(args.nproc_per_node):
        env = rank_environment(args, local_rank)
        env.update(extra_env or {})
        out: Any = None
        err: Any = None
        if args.redirect_stdout_and_stderr:
            os.makedirs(env["GLOG_log_dir"], exist_ok=True)
            mode = "a" if resume else "w"
            out = open(os.path.join(env["GLOG_log_dir"], "stdout"), mode)
            err = open(os.path.join(env["GLOG_log_dir"], "stderr"), mode)
            files += [out, err]
        elif tails is not None:
            out = err = subprocess.PIPE
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, preexec_fn=_die_with_parent)
        ranks.add(proc)
        if tails is not None and not args.redirect_stdout_and_stderr:
            tail = restart.new_tail()
            tails.append(tail)
            restart.OutputTail(proc.stdout, sys.stdout.buffer, tail)
            restart.OutputTail(proc.stderr, sys.stderr.buffer, tail)


class Supervisor:
    """Watches the ranks: forwards signals, ends the run when one fails, picks the exit status."""

    def __init__(self, ranks: Ranks) -> None:
        self.ranks = ranks
        self.signals_received = 0
        self.failure: Optional[int] = None
        self.failed: Optional[int] = None  # the local index of the first rank that failed
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

    def _on_rank_failed(self, index: int, proc: subprocess.Popen) -> None:
        self.failure = exit_status(proc.returncode)
        self.failed = index
        _say(f"libai.launch: rank process {proc.pid} exited with status {self.failure}; ending the "
             f"other ranks (SIGKILL after {KILL_GRACE_SECONDS:g} s)")
        self.ranks.send(signal.SIGTERM)
        self.kill_at = time.monotonic() + KILL_GRACE_SECONDS

    def run(self) -> int:
        """Wait until every rank has exited; returns the launcher's exit status."""
        while True:
            for index in self.ranks.ended_in_order():  # the first to fail is the one to blame
                proc = self.ranks.procs[index]
                if self.failure is None and proc.poll() not in (None, 0):
                    self._on_rank_failed(index, proc)
            if not self.ranks.alive():
                break
            if self.kill_at is not None and time.monotonic() >= self.kill_at:
                self.ranks.kill_groups()
                if self.failure is None:
                    self.failure = 128 + int(signal.SIGKILL)
                break
            time.sleep(POLL_SECONDS)
        return self.failure or 0


class Launch:
    """One launch: its attempts (one, or more with ``--max-restarts``), each a set of ranks under
    a :class:`Supervisor`; signals received go to the current attempt."""

    def __init__(self, args: Namespace, state_dir: str) -> None:
        self.args = args
        self.policy = restart.RestartPolicy(args.max_restarts)
        self.run_file = os.path.join(state_dir, "run.json")
        self.supervisor = Supervisor(Ranks([]))
        self.tails: List[Deque[bytes]] = []  # the last output lines of each rank of this attempt
        self.stopping = 0  # signals received, in an attempt or between two

    def on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        self.stopping += 1
        self.supervisor.on_signal(signum, frame)

    def attempt(self, number: int) -> int:
        """Run attempt ``number`` (0 first) to its end; returns its exit status."""
        self.supervisor = Supervisor(Ranks([]))
        self.tails = []
        files: List[IO] = []
        try:
            start_ranks(self.args, self.supervisor.ranks, files, resume=number > 0,
                        extra_env={restart.RUN_FILE_VARIABLE: self.run_file},
                        tails=self.tails if self.args.max_restarts else None)
            return self.supervisor.run()
        finally:
            self.supervisor.ranks.kill_groups()  # leftover workers, or every rank if the launcher failed
            for f in files:
                f.close()

    def failure(self) -> restart.Failure:
        """What the last attempt's failed rank left: status, place in the run, last output lines."""
        index = self.supervisor.failed or 0
        proc = self.supervisor.ranks.procs[index]
        if self.args.redirect_stdout_and_stderr:
            logs = os.path.join(os.getcwd(), self.args.logdir, f"local_rank_{index}")
            tail = restart.tail_of(os.path.join(logs, "stderr")) or restart.tail_of(os.path.join(logs, "stdout"))
        else:
            restart.OutputTail.finish_all()  # the ranks are gone: their pipes end
            tail = list(self.tails[index]) if index < len(self.tails) else []
        progress = restart.run_progress(restart.read_output_dir(self.run_file))
        return restart.Failure(self.args.nproc_per_node * self.args.node_rank + index, proc.returncode,
                               progress, restart.decode(tail))

    def run(self) -> int:
        """Attempts until one ends well, a signal stops the launch, or no restart is left."""
        number = 0
        while True:
            status = self.attempt(number)
            if status == 0 or self.stopping or self.supervisor.failed is None:
                return status
            if os.path.exists(self.run_file + ".join"):  # a rank gave up waiting for the others
                _say("libai.launch: a rank gave up waiting for the others to join (above); not restarting")
                return _join.JOIN_TIMEOUT_STATUS
            if not self.args.max_restarts:
                return status
            failure = self.failure()
            output_dir = restart.read_output_dir(self.run_file)
            verdict = self.policy.verdict(failure)
            if verdict is not None:
                _say(verdict)
                restart.record(output_dir, verdict + "\n" + failure.last_lines())
                return status
            self.policy.restarts += 1
            number += 1
            pause = restart.backoff_seconds(self.policy.restarts)
            entry = restart.restart_entry(self.policy.restarts, self.policy, failure, pause)
            _say("libai.launch: " + entry.split("\n", 1)[0])
            restart.record(output_dir, entry)
            deadline = time.monotonic() + pause
            while time.monotonic() < deadline and not self.stopping:
                time.sleep(POLL_SECONDS)
            if self.stopping:
                return status


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the launch described by ``argv`` (default: the command line); returns the exit status."""
    args = parse_args(argv)
    problem = check_args(args)
    if problem:
        _say(f"libai.launch: {problem}")
        return _join.BAD_LAUNCH_STATUS
    state_dir = tempfile.mkdtemp(prefix="libai-launch-")
    launch = Launch(args, state_dir)
    # Handlers first: a signal that arrives while the ranks start is forwarded to those started.
    previous = {sig: signal.signal(sig, launch.on_signal) for sig in FORWARDED_SIGNALS}
    try:
        return launch.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
