"""Two data-parallel ranks train the queued-work model of test_wall_clock.py in Eager, then in
Graph mode; rank 0 compares its printed times with its log timestamps and writes the ratios.

    python -m oneflow.distributed.launch --nproc_per_node 2 wall_clock_two_ranks_script.py OUT_DIR
"""
import json
import os
import pathlib
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import libai  # noqa: E402,F401

from libai.utils import distributed as dist  # noqa: E402
from libai.utils.testing import write_record  # noqa: E402
from tests.engine import test_wall_clock as wall  # noqa: E402


def main(out: str) -> None:
    result = {}
    for graph in (False, True):
        folder = pathlib.Path(out) / f"rank{dist.get_rank()}"
        if dist.is_main_process():
            result["graph" if graph else "eager"] = wall.run_and_check(folder, graph)
        else:
            wall.run_only(folder, graph)
    if dist.is_main_process():
        write_record("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
