"""A rank that asks for an output directory with :func:`hold_output_dir` (run it under
``python -m libai.launch``): it writes what it got to ``<marker>.rank<r>`` (``entered``, or
``refused: <message>``) and exits 0 or 3. It ignores SIGTERM, so the launcher ending the run
after the first rank's exit cannot stand in for a rank that refuses by itself.

    run_lock_script.py OUTPUT_DIR MARKER
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import libai  # noqa: E402,F401  (before oneflow)
from libai.utils import distributed as dist  # noqa: E402
from libai.utils.run_lock import OutputDirInUse, hold_output_dir  # noqa: E402


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    output_dir, marker = sys.argv[1], sys.argv[2]
    path = f"{marker}.rank{dist.get_rank()}"
    try:
        with hold_output_dir(output_dir):
            with open(path, "w") as f:
                f.write("entered")
            dist.synchronize()
        code = 0
    except OutputDirInUse as refusal:
        with open(path, "w") as f:
            f.write(f"refused: {refusal}")
        code = 3
        if dist.get_rank() == 0:
            _wait_for_peer_marker(marker)
    sys.stdout.flush()
    os._exit(code)  # no exit barrier with a peer that may already be gone


def _wait_for_peer_marker(marker: str, timeout: float = 60.0) -> None:
    """Rank 0 leaves only once rank 1 has written its own answer: otherwise, on a loaded
    machine, the launcher's kill of the remaining ranks (5 s after the first exit) can land
    before rank 1 has decided, and the test would see nothing from it."""
    import time

    deadline = time.monotonic() + timeout
    while not os.path.exists(f"{marker}.rank1") and time.monotonic() < deadline:
        time.sleep(0.1)


if __name__ == "__main__":
    main()
