#!/usr/bin/env bash
# Run the test suite with the project's virtual environment (what `make test` calls).
#
# The tests run in LIBAI_TEST_WORKERS pytest-xdist workers (default: the cores plus one, 3 on
# this 2-core machine: many files spend part of their time waiting on launched processes, and a
# third worker keeps both cores busy meanwhile; 0 runs them in this one process).
# `--dist loadfile` keeps each file on one worker, so a
# module's shared launches (fixtures that start OneFlow processes) run once; tests/conftest.py
# starts the longest files first. Extra arguments go to pytest:
#   make test PYTEST_ARGS="tests/layers -x"       a subset, still in workers
#   make test PYTEST_ARGS="tests/x.py::test_y -n 0"   one test in one process (or run pytest directly)
#
# OneFlow 0.9 occasionally segfaults inside Graph-mode code on a loaded 2-core machine. A worker
# killed that way is replaced and its file's unfinished tests, the crashed one included, run
# again on the new worker (the crash is listed as a skip; see tests/conftest.py). When pytest
# itself ends by a signal (exit status > 128) the suite is run once more. A run that merely has
# failing tests (status 1) is never retried, so a real failure still fails. The 25 slowest tests
# are listed at the end, to keep the suite's time in view.
#
# Bytecode is cached during the run even where PYTHONDONTWRITEBYTECODE is set (some machines and
# CI images set it): otherwise every worker compiles and assertion-rewrites all ~200 test
# modules again to collect them, and every launched process recompiles the test helpers and
# libai modules it imports (the venv set-up caches only what a training process loads). On a
# clean clone that cost about 2 CPU-minutes of the suite.
#
# Temporary files (pytest's tmp_path folders, and TMPDIR for every process the tests start) go
# to a fresh folder in /dev/shm when that memory file system has LIBAI_TEST_SHM_GB (default 4)
# GB free. The suite writes ~60,000 small files (a OneFlow checkpoint is a folder per tensor):
# on the disk's file system, creating them (inode allocation, the journal) and syncing them was
# a third of the CPU of tests/configs/test_recipes.py (36 -> 26 CPU-s, with the same checks:
# the checkpoint code still writes, renames and syncs). The folder is removed after a passing
# run and kept, with its path printed, after a failing one. LIBAI_TEST_SHM_GB=0 uses /tmp.
#
# NumPy's OpenBLAS runs one thread per product (OPENBLAS_NUM_THREADS=1 unless set): the workers
# already keep every core busy, and each pool thread would busy-wait a tenth of a second after
# starting and after each product in each of the suite's ~170 OneFlow processes. libai's own
# routed OpenBLAS is single-threaded anyway (libai/_blas.py).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
unset PYTHONDONTWRITEBYTECODE
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
workers="${LIBAI_TEST_WORKERS:-$(( $(nproc 2>/dev/null || echo 2) + 1 ))}"
args=(-q --durations=25)
if [ "$workers" != "0" ]; then
  args+=(-n "$workers" --dist loadfile --no-loadscope-reorder --max-worker-restart 3)
fi
shm_tmp=""
shm_free_kb="$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')"
if [ -n "$shm_free_kb" ] && [ -w /dev/shm ] &&
   [ "$shm_free_kb" -ge $(( ${LIBAI_TEST_SHM_GB:-4} * 1024 * 1024 )) ] && [ "${LIBAI_TEST_SHM_GB:-4}" != 0 ] &&
   shm_tmp="$(mktemp -d /dev/shm/libai-tests.XXXXXX)"; then
  export TMPDIR="$shm_tmp"
  args+=(--basetemp "$shm_tmp/pytest")
fi
.venv/bin/python -m pytest "${args[@]}" "$@"
status=$?
if [ "$status" -gt 128 ]; then
  echo "pytest was killed by signal $((status - 128)); running the suite once more"
  .venv/bin/python -m pytest "${args[@]}" "$@"
  status=$?
fi
if [ -n "$shm_tmp" ]; then
  if [ "$status" = 0 ]; then
    rm -rf "$shm_tmp"
  else
    echo "the tests' temporary files are kept in $shm_tmp (memory: remove it when done)"
  fi
fi
exit "$status"
