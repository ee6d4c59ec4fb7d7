"""What a libai rank tells ``python -m libai.launch`` about its run: where its output goes.

The launcher restarts failed runs (``--max-restarts``) without knowing anything of models or
configs; to log each restart into the run's output directory and to see how far the run got
(``last_checkpoint``, ``metrics.json``) it only needs that directory's path. It passes every rank
the path of a small JSON file in ``LIBAI_LAUNCH_RUN_FILE``, and rank 0 writes
``{"output_dir": ...}`` there once it knows it. Outside ``libai.launch`` nothing happens.
"""
import json
import os
from typing import Optional

__all__ = ["RUN_FILE_VARIABLE", "report_output_dir"]

RUN_FILE_VARIABLE = "LIBAI_LAUNCH_RUN_FILE"


def report_output_dir(output_dir: str) -> Optional[str]:
    """Write ``output_dir`` (absolute) to the launcher's run file, atomically; returns the file's
    path, or ``None`` when this process was not started by ``libai.launch``."""
    path = os.environ.get(RUN_FILE_VARIABLE)
    if not path:
        return None
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump({"output_dir": os.path.abspath(output_dir)}, f)
        os.replace(tmp, path)
    except OSError:  # the launcher's folder is gone: it can do without
        return None
    return path
