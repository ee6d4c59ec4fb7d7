#!/usr/bin/env bash
# Create (once) the project's virtual environment in .venv with a Python 3.10 and the
# pinned dependency set that OneFlow 0.9.0 needs. Safe to run repeatedly: it does nothing
# when the environment is already complete (a stamp file records the requirement hash).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${LIBAI_VENV:-$root/.venv}"
req="$root/requirements.txt"
stamp="$venv/.libai-installed"
want="$(cat "$req" "$root/setup.py" "$root"/libai/csrc/*.c | sha256sum | cut -d' ' -f1)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
  exit 0
fi

find_python() {
  # 1. $PYTHON, 2. python3.10 on PATH (a failing pyenv shim does not count),
  # 3. pyenv's install directory directly.
  local cand
  for cand in "${PYTHON:-}" python3.10; do
    [ -n "$cand" ] || continue
    if command -v "$cand" >/dev/null 2>&1 && \
       "$cand" -c 'import sys; assert sys.version_info[:2] <= (3, 10) and sys.version_info[:2] >= (3, 7)' >/dev/null 2>&1; then
      command -v "$cand"; return 0
    fi
  done
  for cand in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10.*/bin/python3.10; do
    if [ -x "$cand" ] && "$cand" -c 'import sys' >/dev/null 2>&1; then
      echo "$cand"; return 0
    fi
  done
  return 1
}

if [ ! -x "$venv/bin/python" ]; then
  if ! py="$(find_python)"; then
    cat >&2 <<'MSG'
error: libai needs Python 3.10 (OneFlow 0.9.0 has wheels for CPython 3.7-3.10 only) and none was found.
Looked at: $PYTHON, `python3.10` on PATH, ${PYENV_ROOT:-~/.pyenv}/versions/3.10.*/bin/python3.10.
Fix: install one (e.g. `pyenv install 3.10.13`, or `apt-get install python3.10 python3.10-venv`)
or point PYTHON at it: PYTHON=/path/to/python3.10 make test
MSG
    exit 1
  fi
  echo "[setup] creating $venv with $py"
  "$py" -m venv "$venv"
fi

# The installer is uv (UV_VERSION, put into the venv by pip) when it can be had: it downloads and
# unpacks the wheels in parallel (OneFlow and the NVIDIA libraries: 2 GB of downloads, 4.5 GB
# unpacked) and keeps them in its cache (~/.cache/uv), from which the next venv is linked. With
# LIBAI_SETUP_PIP=1, or if uv fails, pip installs the same requirements to the same versions
# (unpinned ones resolve to the newest release either way); flowvision's pin is in requirements.txt.
# tools/build_constraints.txt caps setuptools in uv's isolated builds of the three packages that
# ship only as sources (antlr4-python3-runtime, iopath, flowvision): flowvision's setup.py imports
# pkg_resources, which the newest setuptools lacks (pip builds them with the venv's own 65.5).
UV_VERSION=0.13.9
pip_install() { "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-compile "$@"; }
echo "[setup] installing pinned dependencies into $venv (about a minute the first time)"
if [ "${LIBAI_SETUP_PIP:-0}" != 1 ] && pip_install "uv==$UV_VERSION" &&
   "$venv/bin/uv" pip install -q --python "$venv/bin/python" \
     --build-constraints "$root/tools/build_constraints.txt" -r "$req"; then
  :
else
  [ "${LIBAI_SETUP_PIP:-0}" = 1 ] || echo "[setup] uv could not install them; pip does" >&2
  pip_install -r "$req"
fi
# pip for libai itself: its `setup.py develop` puts the repository root on sys.path, so that
# launched scripts import projects/ and tests/ modules (uv's editable install maps libai only).
pip_install --no-deps --no-build-isolation -e "$root"
# Neither installer byte-compiles (all of site-packages: 8,000 files, ~40 CPU-s). Importing what
# a training process and a test process load, with bytecode writing on, compiles just those
# modules (~1,800) once: with PYTHONDONTWRITEBYTECODE set, as on some machines, every process
# would otherwise compile them again (+1.3 CPU-s to import OneFlow, +4 CPU-s to collect the tests).
warm="import libai, libai.engine, libai.models, libai.data, libai.evaluation, libai.inference, libai.tokenizer"
warm="$warm, flowvision, sklearn.datasets, hypothesis, onnx, importlinter.api, pytest, xdist"
(cd "$root" && PYTHONDONTWRITEBYTECODE= "$venv/bin/python" -c "$warm" >/dev/null 2>&1) ||
  echo "[setup] warning: '$warm' failed in $venv/bin/python" >&2
echo "$want" > "$stamp"
echo "[setup] done"
