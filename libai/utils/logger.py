"""Logging set-up for a run: a readable console, ``log.txt``, and a few rate-limited helpers.

:func:`setup_logger` configures the ``libai`` logger (or another named one) once per process:
rank 0 prints to the console in colour and every rank writes a file, so that a message from
any rank can be found after a multi-process run without drowning the console. Calling it again
replaces the handlers it installed rather than adding more, so it is safe to call from several
entry points; :func:`reset_logger` undoes it (tests use this).
"""
import logging
import os
import sys
import time
from collections import defaultdict
from typing import Any, Callable, Dict, Hashable, List, Mapping, Optional, Sequence, Tuple

__all__ = [
    "setup_logger",
    "reset_logger",
    "log_first_n",
    "log_every_n",
    "log_every_n_seconds",
    "reset_log_counters",
    "create_small_table",
    "create_table",
    "collect_env_info",
]

_LIBAI_HANDLER = "_libai_handler"  # attribute marking the handlers setup_logger installed
_DATE_FORMAT = "%m/%d %H:%M:%S"


class _ColorfulFormatter(logging.Formatter):
    """Green logger name and time; warnings and errors stand out in red."""

    def __init__(self, fmt: str, datefmt: str, root_name: str, abbrev_name: Optional[str]) -> None:
        super().__init__(fmt, datefmt=datefmt)
        self._root_name = root_name
        self._abbrev_name = abbrev_name or root_name

    def formatMessage(self, record: logging.LogRecord) -> str:
        from termcolor import colored

        record = logging.makeLogRecord(record.__dict__)
        if record.name == self._root_name or record.name.startswith(self._root_name + "."):
            record.name = self._abbrev_name + record.name[len(self._root_name):]
        text = super().formatMessage(record)
        if record.levelno >= logging.ERROR:
            prefix = colored("ERROR", "red", attrs=["blink", "underline"], force_color=True)
        elif record.levelno >= logging.WARNING:
            prefix = colored("WARNING", "red", attrs=["blink"], force_color=True)
        else:
            return text
        return prefix + " " + text


def setup_logger(
    output: Optional[str] = None,
    distributed_rank: int = 0,
    name: str = "libai",
    color: bool = True,
    abbrev_name: Optional[str] = None,
) -> logging.Logger:
    """Configure logger ``name`` for this process and return it.

    Args:
        output: a folder (the log goes to ``<output>/log.txt``) or a file name ending in
            ``.txt`` or ``.log``. ``None``: console only. Ranks above 0 append ``.rank<R>``.
        distributed_rank: this process's rank. Rank 0 prints everything from DEBUG up; other
            ranks print only warnings and errors, so a multi-process console stays readable.
        name: the logger to configure; its children (``libai.engine...``) go through it.
        color: colour the console when it is a terminal (``NO_COLOR``/``FORCE_COLOR`` in the
            environment override that); the file is always plain text.
        abbrev_name: a short name shown instead of ``name`` on the console (e.g. ``"lb"``).
    """
    log = logging.getLogger(name)
    _remove_our_handlers(log)
    log.setLevel(logging.DEBUG)
    log.propagate = False  # our handlers print it; the root logger would print it again

    plain = logging.Formatter(
        "[%(asctime)s] %(name)s %(levelname)s: %(message)s", datefmt=_DATE_FORMAT
    )
    console = logging.StreamHandler(stream=sys.stdout)
    console.setLevel(logging.DEBUG if distributed_rank == 0 else logging.WARNING)
    if color and distributed_rank == 0 and _wants_color(console.stream):
        from termcolor import colored

        fmt = colored("[%(asctime)s %(name)s]: ", "green", force_color=True) + "%(message)s"
        console.setFormatter(_ColorfulFormatter(fmt, _DATE_FORMAT, name, abbrev_name))
    else:
        console.setFormatter(plain)
    _install(log, console)

    if output is not None:
        filename = log_file_path(output, distributed_rank)
        os.makedirs(os.path.dirname(os.path.abspath(filename)), exist_ok=True)
        file_handler = logging.FileHandler(filename, mode="a", encoding="utf-8")
        file_handler.setLevel(logging.DEBUG)
        file_handler.setFormatter(plain)
        _install(log, file_handler)
    return log


def _wants_color(stream: Any) -> bool:
    """Colour only a terminal, unless the user says otherwise (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def log_file_path(output: str, distributed_rank: int = 0) -> str:
    """Where :func:`setup_logger` writes for ``output`` and ``distributed_rank``."""
    if output.endswith(".txt") or output.endswith(".log"):
        filename = output
    else:
        filename = os.path.join(output, "log.txt")
    if distributed_rank > 0:
        filename = f"{filename}.rank{distributed_rank}"
    return filename


def reset_logger(name: str = "libai") -> None:
    """Remove (and close) the handlers :func:`setup_logger` installed on ``name``."""
    log = logging.getLogger(name)
    _remove_our_handlers(log)
    log.propagate = True
    log.setLevel(logging.NOTSET)


def _install(log: logging.Logger, handler: logging.Handler) -> None:
    setattr(handler, _LIBAI_HANDLER, True)
    log.addHandler(handler)


def _remove_our_handlers(log: logging.Logger) -> None:
    for handler in list(log.handlers):
        if getattr(handler, _LIBAI_HANDLER, False):
            log.removeHandler(handler)
            handler.close()


# ---------------------------------------------------------------------------------------------
# Rate-limited logging
# ---------------------------------------------------------------------------------------------
_counts: Dict[Hashable, int] = defaultdict(int)
_last_logged: Dict[Hashable, float] = {}


def reset_log_counters() -> None:
    """Forget how often each call site has logged (for tests)."""
    _counts.clear()
    _last_logged.clear()


def _caller() -> Tuple[str, Tuple[str, int, str]]:
    """Module name and ``(file, line, function)`` of the first frame outside this module."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    if frame is None:  # pragma: no cover - only if called from nowhere
        return "libai", ("?", 0, "?")
    module = frame.f_globals.get("__name__", "libai")
    if module == "__main__":
        module = "libai"
    code = frame.f_code
    return module, (code.co_filename, frame.f_lineno, code.co_name)


def log_first_n(
    level: int, msg: str, n: int = 1, *, name: Optional[str] = None, key: str = "caller"
) -> None:
    """Log ``msg`` only the first ``n`` times.

    Args:
        key: what counts as "the same message": ``"caller"`` (the calling line),
            ``"message"`` (the text) or ``"caller,message"`` (both).
    """
    parts = set(key.split(","))
    if not parts or not parts <= {"caller", "message"}:
        raise ValueError(
            f"log_first_n key must be 'caller', 'message' or 'caller,message', got {key!r}"
        )
    module, site = _caller()
    counter_key: Tuple[Any, ...] = ("first_n",)
    if "caller" in parts:
        counter_key += (site,)
    if "message" in parts:
        counter_key += (msg,)
    _counts[counter_key] += 1
    if _counts[counter_key] <= n:
        logging.getLogger(name or module).log(level, msg)


def log_every_n(level: int, msg: str, n: int = 1, *, name: Optional[str] = None) -> None:
    """Log ``msg`` on the 1st, (n+1)-th, (2n+1)-th ... call from the same line."""
    module, site = _caller()
    counter_key = ("every_n", site)
    _counts[counter_key] += 1
    if n <= 1 or _counts[counter_key] % n == 1:
        logging.getLogger(name or module).log(level, msg)


def log_every_n_seconds(
    level: int,
    msg: str,
    n: float = 1,
    *,
    name: Optional[str] = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Log ``msg`` from one call site at most once every ``n`` seconds (``clock`` is injectable
    for tests)."""
    module, site = _caller()
    now = clock()
    last = _last_logged.get(site)
    if last is None or now - last >= n:
        _last_logged[site] = now
        logging.getLogger(name or module).log(level, msg)


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------
def create_small_table(small_dict: Mapping[str, Any]) -> str:
    """A one-row table with the keys as headers: handy for a few evaluation results."""
    from tabulate import tabulate

    if not small_dict:
        raise ValueError("create_small_table needs at least one key/value pair")
    return tabulate(
        [list(small_dict.values())],
        headers=list(small_dict.keys()),
        tablefmt="pipe",
        floatfmt=".3f",
        stralign="center",
        numalign="center",
    )


def create_table(rows: Sequence[Sequence[Any]], headers: Optional[Sequence[str]] = None) -> str:
    """A left-aligned table of ``rows`` (for key/value listings such as the environment)."""
    from tabulate import tabulate

    return tabulate(list(rows), headers=list(headers) if headers else (), tablefmt="simple")


def collect_env_info() -> str:
    """A table of what a bug report needs: Python, OneFlow (version and git commit), CUDA,
    devices, NumPy, libai (version and git commit when run from a checkout), CPU count."""
    return create_table(_env_rows(), headers=("component", "value"))


def _env_rows() -> List[Tuple[str, Any]]:
    import numpy as np
    import oneflow as flow

    import libai

    rows: List[Tuple[str, Any]] = [
        ("sys.platform", sys.platform),
        ("Python", sys.version.replace("\n", " ")),
        ("numpy", np.__version__),
        ("oneflow", flow.__version__),
        ("oneflow git commit", getattr(flow, "__git_commit__", "unknown")),
        ("oneflow built with CUDA", _oneflow_cuda_build()),
    ]
    cuda = flow.cuda.is_available()
    rows.append(("CUDA available", cuda))
    count = flow.cuda.device_count() if cuda else 0
    rows.append(("CUDA device count", count))
    for index in range(count):
        rows.append((f"GPU {index}", flow.cuda.get_device_name(index)))
    rows.append(("libai", libai.__version__))
    rows.append(("libai git commit", _git_commit(os.path.dirname(libai.__file__))))
    rows.append(("CPU count", os.cpu_count()))
    rows.append(("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "unset")))
    rows.append(("OPENBLAS_CORETYPE", _blas_row()))
    rows.append(("CPU matrix products", _route_row()))
    for variable in ("ONEFLOW_VM_COMPUTE_ON_WORKER_THREAD", "ONEFLOW_ENABLE_ONEDNN_OPTS"):
        rows.append((variable, os.environ.get(variable, "unset (OneFlow's default)")))
    return rows


def _blas_row() -> str:
    """The BLAS kernels chosen at ``import libai``, checked against NumPy on a small product
    (raises, naming the variable, when OneFlow's result differs)."""
    from libai._runtime import check_blas_kernels, describe_blas_choice

    error = check_blas_kernels()
    return f"{describe_blas_choice()}; matmul agrees with NumPy ({error:.0e} relative)"


def _route_row() -> str:
    """Where OneFlow's CPU matrix products go (see :func:`libai._blas.route_matrix_products`)."""
    from libai._runtime import matrix_route

    route = matrix_route() or {"reason": "route_matrix_products did not run: OneFlow's own sgemm"}
    return route["reason"]


def _oneflow_cuda_build() -> str:
    import oneflow.sysconfig as sysconfig  # loads OneFlow: only when the table is asked for

    if not sysconfig.with_cuda():
        return "no"
    return f"yes (CUDA {sysconfig.get_cuda_version()})"


def _git_commit(folder: str) -> str:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", folder, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "not a checkout"
