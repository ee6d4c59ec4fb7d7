"""Helpers for the config tests: write small file trees into a temporary directory."""
import os
import subprocess
import sys
import textwrap

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def write(tmp_path):
    """``write("a/b.py", source)`` creates the file (dedented) under tmp_path; returns its path."""

    def _write(relative: str, text: str = "") -> str:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return str(path)

    return _write


@pytest.fixture
def run_python(tmp_path_factory):
    """Run Python code as a script in a fresh interpreter, from ``cwd``.

    The script lives in its own temporary folder, like ``tools/train_net.py`` run from a project
    folder: the working directory is then *not* on ``sys.path`` (``python -c`` would put it there
    and hide bugs in resolving imports against the working directory).
    """

    def _run(code: str, cwd: str, env_extra=None) -> subprocess.CompletedProcess:
        script = tmp_path_factory.mktemp("script") / "run.py"
        script.write_text(textwrap.dedent(code))
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO_ROOT  # the libai under test, wherever the venv points
        env.update(env_extra or {})
        return subprocess.run(
            [sys.executable, str(script)], cwd=cwd, env=env,
            capture_output=True, text=True, timeout=120,
        )

    return _run
