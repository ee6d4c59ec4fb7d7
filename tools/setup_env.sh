#!/usr/bin/env bash
# Create (once) the project's virtual environment in .venv with a Python 3.10 and the
# pinned dependency set that OneFlow 0.9.0 needs. Safe to run repeatedly: it does nothing
# when the environment is already complete (a stamp file records the requirement hash).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${LIBAI_VENV:-$root/.venv}"
req="$root/requirements.txt"
stamp="$venv/.libai-installed"
want="$(cat "$req" "$root/setup.py" "$root"/libai/csrc/*.c "$root/libai_import_hook.pth" | sha256sum | cut -d' ' -f1)"

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
  # Without pip: ensurepip alone takes 5 s. uv installs everything, pip included (for users'
  # own `.venv/bin/pip install`); the pip route below bootstraps pip when it is taken.
  "$py" -m venv --without-pip "$venv"
fi

# The installer is uv (UV_VERSION) when it can be had: it downloads and unpacks the wheels in
# parallel (OneFlow and the NVIDIA libraries: 2 GB of downloads, 4.5 GB unpacked) and keeps them
# in its cache (~/.cache/uv), from which the next venv is linked. uv itself is put into the venv
# by the base interpreter's pip (pip 22.3+ installs into another environment with --python), or
# by a pip bootstrapped into the venv. With LIBAI_SETUP_PIP=1, or if uv fails, pip installs the
# same requirements to the same versions (unpinned ones resolve to the newest release either
# way); flowvision's pin is in requirements.txt.
# tools/build_constraints.txt caps setuptools in uv's isolated builds of the three packages that
# ship only as sources (antlr4-python3-runtime, iopath, flowvision): flowvision's setup.py imports
# pkg_resources, which the newest setuptools lacks (pip builds them with the venv's own 65.5).
UV_VERSION=0.13.9
quiet_pip=(install -q --disable-pip-version-check --no-compile)
pip_install() { "$venv/bin/python" -m pip "${quiet_pip[@]}" "$@"; }
venv_pip() {  # pip inside the venv, bootstrapped by ensurepip when missing
  "$venv/bin/python" -m pip --version >/dev/null 2>&1 || "$venv/bin/python" -m ensurepip >/dev/null
}
install_uv() {
  [ -x "$venv/bin/uv" ] && "$venv/bin/uv" --version 2>/dev/null | grep -q " $UV_VERSION" && return 0
  local base  # the interpreter the venv was made from (pyvenv.cfg's "home" is its folder)
  base="$(sed -n 's/^home *= *//p' "$venv/pyvenv.cfg" 2>/dev/null | head -n 1)/python3"
  if [ -x "$base" ] && "$base" -m pip --python "$venv/bin/python" "${quiet_pip[@]}" "uv==$UV_VERSION" 2>/dev/null; then
    return 0
  fi
  venv_pip && pip_install "uv==$UV_VERSION"
}
uv_install() { "$venv/bin/uv" pip install -q --python "$venv/bin/python" "$@"; }
echo "[setup] installing pinned dependencies into $venv (about a minute the first time)"
# libai itself is installed editable in setuptools' compat mode, as `setup.py develop` does: the
# repository root goes on sys.path, so that launched scripts import projects/ and tests/
# modules (the default editable mode maps the libai package only).
if [ "${LIBAI_SETUP_PIP:-0}" != 1 ] && install_uv &&
   uv_install --build-constraints "$root/tools/build_constraints.txt" -r "$req" pip &&
   uv_install --no-deps --no-build-isolation -C editable_mode=compat -e "$root"; then
  :
else
  [ "${LIBAI_SETUP_PIP:-0}" = 1 ] || echo "[setup] uv could not install them; pip does" >&2
  venv_pip
  pip_install -r "$req"
  pip_install --no-deps --no-build-isolation -e "$root"
fi
# The start-up hook that makes `import oneflow` import libai first (libai_import_hook.py): an
# editable install does not copy setup.py's .pth into site-packages, so it is written here.
site_dir="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cp "$root/libai_import_hook.pth" "$site_dir/libai_import_hook.pth"
# Neither installer byte-compiles (all of site-packages: 8,000 files, ~40 CPU-s). Importing what
# a training process and a test process load, with bytecode writing on, compiles just those
# modules (~1,800) once: with PYTHONDONTWRITEBYTECODE set, as on some machines, every process
# would otherwise compile them again (+1.3 CPU-s to import OneFlow, +4 CPU-s to collect the tests).
# Two imports side by side (OneFlow's side and the test tools'), one per core.
warm_training="import libai, libai.engine, libai.models, libai.data, libai.evaluation, libai.inference, libai.tokenizer, flowvision"
warm_tests="import sklearn.datasets, hypothesis, onnx, importlinter.api, pytest, xdist"
warm() { (cd "$root" && PYTHONDONTWRITEBYTECODE= "$venv/bin/python" -c "$1" >/dev/null 2>&1) ||
  echo "[setup] warning: '$1' failed in $venv/bin/python" >&2; }
warm "$warm_training" &
warm "$warm_tests"
wait
echo "$want" > "$stamp"
echo "[setup] done"
