"""The one way the tests run a launched comparison script and read what it found.

Each ``*_script.py`` of the distributed tests is started under ``oneflow.distributed.launch``
with the path of a JSON file as its first argument; rank 0 writes its results there (see
tests/layers/parallel_helpers.py ``write_results``). Module-scoped fixtures call
:func:`launched_results` once and every test of the module reads its part.
"""
import json
import os
from typing import Any, Dict, Sequence

from libai.utils.testing import launch


def launched_results(tmp_path_factory: Any, script: str, nproc: int = 2, args: Sequence[str] = (),
                     timeout: float = 600) -> Dict[str, Any]:
    """Run ``script OUT.json *args`` in ``nproc`` launched processes (from the script's folder,
    so that it imports its helpers), require exit status 0 (else fail with the end of the
    output) and return the JSON that rank 0 wrote."""
    name = os.path.splitext(os.path.basename(script))[0]
    out = str(tmp_path_factory.mktemp(name) / "results.json")
    proc = launch(script, nproc, args=[out, *args], timeout=timeout, cwd=os.path.dirname(script))
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(out) as f:
        return json.load(f)
