#!/usr/bin/env bash
# Create (once) the project's virtual environment in .venv with a Python 3.10 and the
# pinned dependency set that OneFlow 0.9.0 needs. Safe to run repeatedly: it does nothing
# when the environment is already complete (a stamp file records the requirement hash).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${LIBAI_VENV:-$root/.venv}"
req="$root/requirements.txt"
stamp="$venv/.libai-installed"
want="$(cat "$req" "$root/setup.py" | sha256sum | cut -d' ' -f1)"

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

echo "[setup] installing pinned dependencies into $venv (about a minute the first time)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps flowvision==0.2.1
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$root"
echo "$want" > "$stamp"
echo "[setup] done"
