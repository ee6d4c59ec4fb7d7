"""Check a libai Dockerfile where no container engine runs: parse it, check what it refers
to, and optionally replay its build and run steps in a fresh virtual environment.

    python docker/verify_dockerfile.py docker/Dockerfile              # static checks (seconds)
    python docker/verify_dockerfile.py docker/Dockerfile --replay     # + build & run (minutes)

Static checks: one ``FROM``; every ``COPY`` source exists in the build context and is not
excluded by ``.dockerignore``; ``ENTRYPOINT`` is in exec (JSON) form and names a script of the
repository; the mounts the documentation promises (``/mnt/config``, ``/mnt/output``) are
declared volumes.

``--replay`` copies the build context (minus ``.dockerignore``) to a temporary "image root",
creates a virtual environment with Python 3.10 (the base image's Python), runs every ``RUN``
line there with that environment's ``python``/``pip`` first on ``PATH`` (operating-system
package lines, ``apt-get``, are reported and skipped: they need the base image), then runs the
``ENTRYPOINT`` as ``docker run`` would, with ``/mnt/config`` and ``/mnt/output`` mapped to
temporary folders holding a small config, and checks the run wrote its metrics and checkpoint.
"""
import argparse
import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOUNTS = ("/mnt/config", "/mnt/output")
OS_PACKAGE_TOOLS = ("apt-get", "apt ", "apk ", "yum ", "dnf ")

# The config the replayed container trains: the synthetic tiny GPT, shrunk to seconds.
SMOKE_CONFIG = '''\
from libai.config import get_config

_base = get_config("examples/gpt_tiny_synthetic.py")
train, optim, graph, model, dataloader = (
    _base.train, _base.optim, _base.graph, _base.model, _base.dataloader)
train.train_iter = 4
train.log_period = 1
train.checkpointer.period = 4
train.evaluation.enabled = False
'''


@dataclass
class Instruction:
    keyword: str
    argument: str
    line: int


def parse(path: str) -> List[Instruction]:
    """Instructions of a Dockerfile, continuation lines joined, comments dropped."""
    out: List[Instruction] = []
    pending, start = "", 0
    with open(path) as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if pending and line.lstrip().startswith("#"):
                continue
            if not pending:
                start = number
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            text = (pending + line).strip()
            pending = ""
            keyword, _, argument = text.partition(" ")
            out.append(Instruction(keyword.upper(), argument.strip(), start))
    if pending:
        raise ValueError(f"{path}: the last instruction ends with a line continuation")
    return out


def read_dockerignore(context: str) -> List[str]:
    path = os.path.join(context, ".dockerignore")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def ignored(relpath: str, patterns: Sequence[str]) -> bool:
    parts = relpath.split(os.sep)
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if pattern.startswith("**/"):
            if any(fnmatch.fnmatch(p, pattern[3:]) for p in parts):
                return True
        elif fnmatch.fnmatch(relpath, pattern) or fnmatch.fnmatch(parts[0], pattern):
            return True
    return False


def static_check(dockerfile: str, context: str = REPO) -> List[str]:
    """Problems found (empty when the Dockerfile is consistent with the repository)."""
    problems: List[str] = []
    instructions = parse(dockerfile)
    patterns = read_dockerignore(context)
    froms = [i for i in instructions if i.keyword == "FROM"]
    if len(froms) != 1:
        problems.append(f"expected one FROM, found {len(froms)}")
    for ins in instructions:
        if ins.keyword == "COPY":
            sources = shlex.split(ins.argument)[:-1]
            for source in sources:
                if source == ".":
                    continue
                if not os.path.exists(os.path.join(context, source)):
                    problems.append(f"line {ins.line}: COPY source {source!r} is not in the context")
                elif ignored(os.path.normpath(source), patterns):
                    problems.append(f"line {ins.line}: COPY source {source!r} is excluded by .dockerignore")
    entry = [i for i in instructions if i.keyword == "ENTRYPOINT"]
    if len(entry) != 1:
        problems.append(f"expected one ENTRYPOINT, found {len(entry)}")
    else:
        try:
            argv = json.loads(entry[0].argument)
        except json.JSONDecodeError:
            problems.append("ENTRYPOINT must be in exec form (a JSON list) so signals reach Python")
        else:
            scripts = [a for a in argv if a.endswith(".py")]
            if not scripts or not os.path.exists(os.path.join(context, scripts[0])):
                problems.append(f"ENTRYPOINT {argv} does not name a script of the repository")
    volumes = " ".join(i.argument for i in instructions if i.keyword == "VOLUME")
    for mount in MOUNTS:
        if mount not in volumes:
            problems.append(f"the documented mount {mount} is not a VOLUME")
    return problems


def _find_python310() -> str:
    """A working Python 3.10: $PYTHON, the base of the running interpreter, python3.10 on PATH
    or pyenv's (a pyenv shim that cannot run does not count)."""
    candidates = [os.environ.get("PYTHON"),
                  os.path.join(sys.base_prefix, "bin", "python3.10"),
                  shutil.which("python3.10")]
    pyenv = os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")), "versions")
    if os.path.isdir(pyenv):
        candidates += [os.path.join(pyenv, name, "bin", "python3.10")
                       for name in sorted(os.listdir(pyenv), reverse=True) if name.startswith("3.10")]
    for cand in candidates:
        if cand and os.path.exists(cand) and subprocess.run(
                [cand, "-c", "import sys; assert sys.version_info[:2] == (3, 10)"],
                capture_output=True).returncode == 0:
            return cand
    raise SystemExit("no Python 3.10 found (set PYTHON=/path/to/python3.10)")


def _copy_context(context: str, dest: str, patterns: Sequence[str]) -> None:
    for folder, dirs, files in os.walk(context):
        rel_folder = os.path.relpath(folder, context)
        keep = []
        for d in dirs:
            rel = os.path.normpath(os.path.join(rel_folder, d))
            if not ignored(rel, patterns):
                keep.append(d)
        dirs[:] = keep
        for name in files:
            rel = os.path.normpath(os.path.join(rel_folder, name))
            if ignored(rel, patterns):
                continue
            os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
            shutil.copy2(os.path.join(folder, name), os.path.join(dest, rel))


def _env_of(instructions: Sequence[Instruction]) -> Dict[str, str]:
    env: Dict[str, str] = {}
    for ins in instructions:
        if ins.keyword == "ENV":
            for pair in shlex.split(ins.argument):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def replay(dockerfile: str, root: str, context: str = REPO,
           run_args: Optional[List[str]] = None) -> Tuple[List[str], str]:
    """Build and run the image's steps under ``root``; return (log lines, output dir)."""
    instructions = parse(dockerfile)
    patterns = read_dockerignore(context)
    workdir = os.path.join(root, "opt", "libai")
    venv = os.path.join(root, "venv")
    log: List[str] = []
    subprocess.run([_find_python310(), "-m", "venv", venv], check=True)
    env = dict(os.environ)
    env.update(_env_of(instructions))
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env["PATH"]
    env.pop("PYTHONPATH", None)
    os.makedirs(workdir, exist_ok=True)
    for ins in instructions:
        if ins.keyword == "COPY":
            *sources, _ = shlex.split(ins.argument)
            for source in sources:
                if source == ".":
                    _copy_context(context, workdir, patterns)
                else:
                    shutil.copy2(os.path.join(context, source), workdir)
            log.append(f"COPY {ins.argument}: done")
        elif ins.keyword == "RUN":
            if any(tool in ins.argument for tool in OS_PACKAGE_TOOLS):
                log.append(f"RUN (line {ins.line}) skipped: operating-system packages need the base image")
                continue
            command = ins.argument.replace("python -m pip", "pip")
            subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=workdir, env=env, check=True)
            log.append(f"RUN (line {ins.line}): {command[:70]}... ok")
    mounts = {m: os.path.join(root, m.strip("/").replace("/", "_")) for m in MOUNTS}
    for path in mounts.values():
        os.makedirs(path, exist_ok=True)
    with open(os.path.join(mounts["/mnt/config"], "train.py"), "w") as f:
        f.write(SMOKE_CONFIG)
    entry = json.loads(next(i for i in instructions if i.keyword == "ENTRYPOINT").argument)
    args = run_args or ["--config-file", "/mnt/config/train.py", "train.output_dir=/mnt/output"]
    args = [_remap(a, mounts) for a in args]
    subprocess.run(entry + args, cwd=workdir, env=env, check=True)
    log.append(f"ENTRYPOINT {entry} {' '.join(args)}: ok")
    return log, mounts["/mnt/output"]


def _remap(arg: str, mounts: Dict[str, str]) -> str:
    for mount, path in mounts.items():
        arg = arg.replace(mount, path)
    return arg


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dockerfile", nargs="+", help="Dockerfile(s) to check")
    parser.add_argument("--replay", action="store_true",
                        help="also replay the build and run steps in a fresh virtualenv (CPU image)")
    parser.add_argument("--keep", metavar="DIR", help="replay under DIR and keep it")
    args = parser.parse_args(argv)
    failed = False
    for dockerfile in args.dockerfile:
        problems = static_check(dockerfile)
        for p in problems:
            print(f"{dockerfile}: {p}", file=sys.stderr)
        failed |= bool(problems)
        print(f"{dockerfile}: static checks {'FAILED' if problems else 'passed'}")
    if args.replay and not failed:
        root = args.keep or tempfile.mkdtemp(prefix="libai_docker_replay_")
        log, output = replay(args.dockerfile[0], root)
        print("\n".join(log))
        metrics = os.path.join(output, "metrics.json")
        if not os.path.exists(metrics):
            print(f"replay: the run wrote no {metrics}", file=sys.stderr)
            return 1
        print(f"replay: passed; the container's output is in {output}")
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
