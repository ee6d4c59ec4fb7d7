#!/usr/bin/env bash
# Run the test suite with the project's virtual environment (what `make test` calls).
#
# OneFlow 0.9 occasionally segfaults inside Graph-mode code on a loaded 2-core machine, and a
# crash kills pytest itself. When the run ends by a signal (exit status > 128) the suite is run
# once more; a run that merely has failing tests (status 1) is never retried, so a real failure
# still fails. The 25 slowest tests are listed at the end, to keep the suite's time in view.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
.venv/bin/python -m pytest -q --durations=25 "$@"
status=$?
if [ "$status" -gt 128 ]; then
  echo "pytest was killed by signal $((status - 128)); running the suite once more"
  .venv/bin/python -m pytest -q --durations=25 "$@"
  status=$?
fi
exit "$status"
