"""The runner's common part: scratch copies, one run of a case, its result, the table.

A *case* is one LiBai artifact (a ready config or a project) copied unchanged from a LiBai
checkout into a scratch folder, with tiny data written beside it, and command-line overrides
that shrink it. :func:`run_case` trains it a few iterations with evaluation on, then runs
``--eval-only`` on the weights it saved, each in a fresh process, and condenses both runs into
a :class:`Result`: ok or the first error (the innermost ``file:line`` of the root-cause
traceback and its message), iterations run (from ``metrics.json``) and whether the last loss
is finite. The same case can be run by upstream LiBai (``engine="upstream"``, through
``run_libai.py``) to see what LiBai itself does on this machine.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUR_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
OUR_TRAIN_NET = os.path.join(REPO, "tools", "train_net.py")
REF_ROOT = os.environ.get("LIBAI_REF", os.path.join(os.path.dirname(REPO), "libai_ref"))
REF_PYTHON = os.path.join(REF_ROOT, "venv", "bin", "python")
# LiBai's CPU shims live in the team's shared folder beside the repository (never committed)
RUN_LIBAI = os.environ.get(
    "LIBAI_REF_RUNNER",
    os.path.join(os.path.dirname(REPO), "shared", "libai_reference", "run_libai.py"),
)


@dataclass
class Prepared:
    """What a case's ``prepare`` hook returns: the config to run and how to shrink it.

    ``overrides`` apply to both runs; ``train_overrides`` / ``eval_overrides`` to one of them;
    ``upstream_overrides`` are added when upstream LiBai runs the case (e.g. its CPU device).
    ``env`` is added to the environment of both engines; ``cwd`` defaults to the scratch dir.
    """

    config: str
    overrides: List[str] = field(default_factory=list)
    train_overrides: List[str] = field(default_factory=list)
    eval_overrides: List[str] = field(default_factory=list)
    upstream_overrides: List[str] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    cwd: Optional[str] = None
    eval_only: bool = True
    note: str = ""
    # projects: run through project_entry.py from the scratch root, which keeps this repository's
    # own ``projects`` package off sys.path; ``entry`` is a project's own script (its
    # ``train_net.py``), None for tools/train_net.py
    project: bool = False
    entry: Optional[str] = None


@dataclass
class Case:
    """One artifact to run. ``prepare(libai_src, scratch)`` copies it into ``scratch`` unchanged,
    writes its tiny data there and returns a :class:`Prepared`."""

    name: str
    kind: str  # "config" or "project"
    prepare: Callable[[str, str], Prepared]
    skip_reason: str = ""  # set for an artifact that cannot run on a CPU here (why, in words)


@dataclass
class Result:
    name: str
    kind: str
    status: str  # "ok", "skipped: ..." or the first error
    iterations: int = 0
    loss_finite: Optional[bool] = None
    eval_only: str = ""  # "ok", "-" (not run) or the first error of the --eval-only run
    seconds: float = 0.0
    log: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.eval_only in ("ok", "-")


# ---------------------------------------------------------------- copying

def copy_tree(src: str, dst: str) -> str:
    """Copy ``src`` to ``dst`` byte for byte (no edits); ``__pycache__`` left out."""
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)
    return dst


# ---------------------------------------------------------------- reading a run

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours OneFlow puts in its messages
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+)$')
# the last line of a traceback: "module.path.ExceptionName: message" (the name capitalised)
_EXC = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s?(.*))?$")


def first_error(output: str) -> str:
    """``file:line: Type: message`` of the root cause in a Python traceback log.

    With chained exceptions the first traceback printed is the root cause; its innermost frame
    is where it was raised. Falls back to the last line that looks like an error (a process
    killed by OneFlow's ``F`` checks prints no Python traceback).
    """
    lines = _ANSI.sub("", output).splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if starts:
        frame = None
        for line in lines[starts[0] + 1:]:
            match = _FRAME.match(line)
            if match:
                frame = match
                continue
            exc = _EXC.match(line.strip())
            if exc and not line.startswith(" "):
                where = f"{_short(frame.group(1))}:{frame.group(2)}" if frame else "?"
                message = (exc.group(2) or "").strip()
                return f"{where}: {exc.group(1).split('.')[-1]}: {message}"[:300]
    for line in reversed(lines):
        text = line.strip()
        if text and ("Error" in text or "error" in text or text.startswith("F ")
                     or "Check failed" in text or "Aborted" in text):
            return text[:300]
    tail = [line for line in lines if line.strip()][-1:] or ["(no output)"]
    return tail[0][:300]


def _short(path: str) -> str:
    """A path relative to the interesting root (site-packages, a libai checkout, the scratch)."""
    for marker in ("site-packages/", "/libai_ref/src/", REPO + "/", "/scratch/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return os.path.basename(path)


def read_metrics(output_dir: str) -> (int, Optional[bool]):
    """Iterations run and whether the last ``total_loss`` is finite, from ``metrics.json``."""
    path = os.path.join(output_dir, "metrics.json")
    if not os.path.isfile(path):
        return 0, None
    last_iter, last_loss = -1, None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if "total_loss" in record:
                last_iter = max(last_iter, int(record.get("iteration", -1)))
                last_loss = float(record["total_loss"])
    if last_loss is None:
        return 0, None
    return last_iter + 1, math.isfinite(last_loss)


# ---------------------------------------------------------------- running

PROJECT_ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "project_entry.py")


def command(engine: str, config: str, args: Sequence[str], prepared: Optional[Prepared] = None) -> List[str]:
    if prepared is not None and prepared.project:
        python = REF_PYTHON if engine == "upstream" else (
            OUR_PYTHON if os.path.exists(OUR_PYTHON) else sys.executable)
        entry = ["--entry", prepared.entry] if prepared.entry else []
        return [python, PROJECT_ENTRY, "--engine", engine, *entry, "--config-file", config, *args]
    if engine == "libai":
        return [OUR_PYTHON if os.path.exists(OUR_PYTHON) else sys.executable, OUR_TRAIN_NET,
                "--config-file", config, *args]
    if engine == "upstream":
        return [REF_PYTHON, RUN_LIBAI, "--config-file", config, *args]
    raise ValueError(f"engine must be 'libai' or 'upstream', got {engine!r}")


def _run(cmd: List[str], cwd: str, env: Dict[str, str], timeout: float, log_path: str,
         engine: str) -> (int, str):
    # first_error reads the root cause's place from the traceback, which libai prints for a
    # user's mistake only when asked (libai.engine.user_errors)
    full_env = {**os.environ, "LIBAI_FULL_ERROR": "1", **env}
    if engine == "upstream":
        full_env["LIBAI_REF"] = REF_ROOT
        # upstream is imported from its checkout, never this repository; its data helpers are
        # (re)built by `make` with the python3-config of the venv, which must come first on PATH
        full_env.pop("PYTHONPATH", None)
        full_env["PATH"] = os.path.join(REF_ROOT, "venv", "bin") + os.pathsep + full_env.get("PATH", "")
    start = time.time()
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = -999
    with open(log_path, encoding="utf-8", errors="replace") as log:
        text = log.read()
    if code == -999:
        text += f"\nTimeoutError: no result after {timeout:.0f} s ({time.time() - start:.0f} s)"
    return code, text


def find_weights(output_dir: str) -> Optional[str]:
    """The final (else the newest) checkpoint directory a training run left."""
    final = os.path.join(output_dir, "model_final")
    if os.path.isdir(final):
        return final
    last = os.path.join(output_dir, "last_checkpoint")
    if os.path.isfile(last):
        with open(last, encoding="utf-8") as handle:
            name = handle.read().strip()
        if name and os.path.isdir(os.path.join(output_dir, name)):
            return os.path.join(output_dir, name)
    return None


def run_case(case: Case, libai_src: str, scratch_root: str, engine: str = "libai",
             timeout: float = 900.0) -> Result:
    """Prepare ``case`` in a fresh scratch folder and run it with ``engine``."""
    if case.skip_reason:
        return Result(case.name, case.kind, f"skipped: {case.skip_reason}", eval_only="-")
    scratch = os.path.join(scratch_root, engine, case.name)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    start = time.time()
    try:
        prepared = case.prepare(libai_src, scratch)
    except Exception as error:  # the runner's own data writing failed: say so, do not hide it
        return Result(case.name, case.kind, f"prepare failed: {type(error).__name__}: {error}")
    cwd = prepared.cwd or scratch
    out = os.path.join(scratch, "output")
    shared = [*prepared.overrides, f"train.output_dir={out}"]
    if engine == "upstream":
        shared += prepared.upstream_overrides
    log = os.path.join(scratch, f"{engine}-train.log")
    code, text = _run(command(engine, prepared.config, [*shared, *prepared.train_overrides], prepared),
                      cwd, prepared.env, timeout, log, engine)
    iterations, finite = read_metrics(out)
    status = "ok" if code == 0 else first_error(text)
    result = Result(case.name, case.kind, status, iterations, finite, "-", log=log)
    if code == 0 and prepared.eval_only:
        weights = find_weights(out)
        # flags before the key=value overrides: LiBai's parser takes everything after the
        # first override as overrides (libai accepts either order)
        args = ["--eval-only", *shared, *prepared.eval_overrides]
        if weights:
            args.append(f"train.load_weight={weights}")
        eval_log = os.path.join(scratch, f"{engine}-eval.log")
        code, text = _run(command(engine, prepared.config, args, prepared), cwd, prepared.env, timeout,
                          eval_log, engine)
        result.eval_only = "ok" if code == 0 else first_error(text)
        if not weights and code == 0:
            result.eval_only = "ok (no checkpoint to load)"
    result.seconds = time.time() - start
    return result


# ---------------------------------------------------------------- the table

def table(results: Sequence[Result], markdown: bool = True) -> str:
    """One row per case: name, ok or the first error, iterations run, final loss finite,
    and the ``--eval-only`` run."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    head = ["name", "result", "iterations", "final loss finite", "--eval-only"]
    rows = []
    for r in results:
        finite = "-" if r.loss_finite is None else ("yes" if r.loss_finite else "NO")
        rows.append([r.name, cell(r.status), str(r.iterations), finite, cell(r.eval_only)])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*row) for row in rows])
