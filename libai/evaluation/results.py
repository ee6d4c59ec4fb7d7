"""Showing evaluation results: a table in the log, and flat names for metric writers."""
import logging
from collections.abc import Mapping
from typing import Any, Dict, Optional

from tabulate import tabulate

__all__ = ["flatten_results_dict", "results_table", "print_csv_format"]

logger = logging.getLogger(__name__)


def flatten_results_dict(results: Mapping, prefix: str = "") -> Dict[str, Any]:
    """``{"task": {"Acc@1": 1.0}}`` → ``{"task/Acc@1": 1.0}``, for metric writers that need
    one flat name per scalar."""
    flat: Dict[str, Any] = {}
    for key, value in results.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            flat.update(flatten_results_dict(value, name))
        else:
            flat[name] = value
    return flat


def results_table(results: Mapping, floatfmt: str = ".4f") -> str:
    """A two-column ``metric | value`` table of (possibly nested) results."""
    rows = list(flatten_results_dict(results).items())
    return tabulate(rows, headers=["metric", "value"], tablefmt="pipe", floatfmt=floatfmt)


def print_csv_format(results: Mapping, log: Optional[logging.Logger] = None) -> str:
    """Log ``results`` as a table followed by one comma-separated line that pastes into a
    spreadsheet; returns the logged text.

    Args:
        results: ``{metric: value}``, or ``{task: {metric: value}}`` as several test sets give.
        log: the logger to use (this module's by default).
    """
    if not isinstance(results, Mapping):
        raise TypeError(
            f"print_csv_format takes the dict an evaluator returns, got {type(results).__name__}"
        )
    flat = flatten_results_dict(results)
    csv_line = ",".join(_fmt(v) for v in flat.values())
    text = (
        f"Evaluation results:\n{results_table(results)}\n"
        f"copypaste: {','.join(flat)}\ncopypaste: {csv_line}"
    )
    (log or logger).info(text)
    return text


def _fmt(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)
