"""Curves from ``metrics.json``: losses, learning rate, timing and evaluation metrics as PNGs.

``metrics.json`` is a JSON-lines file written by :class:`~libai.utils.writers.JSONWriter`. A
run that crashed may leave a truncated line, and a resumed run appends lines for iterations it
repeats; both are handled: unreadable lines are skipped with a warning, and for an iteration
seen twice the later value wins (it comes from the run that continued).

The drawing helpers (:func:`draw_series`, :func:`draw_matrix`, :func:`image_grid`) also serve
the live plots and TensorBoard hooks during training.

Plots are drawn with matplotlib's Agg canvas directly, without ``pyplot``, so calling this from
a notebook or a training process does not change the user's matplotlib backend.
"""
import json
import logging
import math
import os
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = [
    "read_metrics",
    "metric_series",
    "group_series",
    "plot_metrics",
    "draw_series",
    "draw_matrix",
    "save_figure_atomic",
    "image_grid",
]

logger = logging.getLogger(__name__)

Series = Dict[str, List[Tuple[int, float]]]

# Training bookkeeping that is neither a loss, the learning rate nor an evaluation result.
TIMING_KEYS = ("time", "data_time", "throughput", "eta_seconds")


def metrics_file(run_or_file: str) -> str:
    """The metrics.json meant by ``run_or_file``: a run's output directory (its
    ``metrics.json``) or the file itself. A directory without one is an error that says so."""
    if os.path.isdir(run_or_file):
        path = os.path.join(run_or_file, "metrics.json")
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"no metrics file at {path}: {run_or_file} is not a run's output directory "
                "(training writes <train.output_dir>/metrics.json)"
            )
        return path
    return run_or_file


def read_metrics(path: str) -> List[dict]:
    """Every readable JSON object of ``path`` that has an ``iteration``, in file order."""
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"no metrics file at {path}; training writes it to <train.output_dir>/metrics.json"
        )
    records, skipped = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                skipped.append(number)  # e.g. the last line of a run that crashed mid-write
                continue
            if isinstance(record, dict) and "iteration" in record:
                records.append(record)
            else:
                skipped.append(number)
    if skipped:
        logger.warning("%s: skipped %d unreadable line(s): %s", path, len(skipped), skipped[:10])
    if not records:
        raise ValueError(
            f"{path} holds no metrics lines (JSON objects with an 'iteration'); is it a "
            "metrics.json written by libai's JSONWriter?"
        )
    return records


def metric_series(records: Sequence[dict]) -> Series:
    """``name -> [(iteration, value), ...]`` sorted by iteration; a repeated iteration keeps
    its last value. Non-numeric fields are ignored."""
    by_name: Dict[str, Dict[int, float]] = {}
    for record in records:
        iteration = int(record["iteration"])
        for name, value in record.items():
            if name == "iteration" or isinstance(value, bool):
                continue
            if isinstance(value, (int, float)) and math.isfinite(value):
                by_name.setdefault(name, {})[iteration] = float(value)
    return {name: sorted(points.items()) for name, points in by_name.items()}


def group_series(series: Series) -> Dict[str, Series]:
    """Split series into the plots drawn: ``losses``, ``lr``, ``timing`` and ``eval``
    (everything else, e.g. ``Acc@1``). Empty groups are left out."""
    groups: Dict[str, Series] = {"losses": {}, "lr": {}, "timing": {}, "eval": {}}
    for name, points in series.items():
        if "loss" in name:
            groups["losses"][name] = points
        elif name == "lr":
            groups["lr"][name] = points
        elif name in TIMING_KEYS:
            groups["timing"][name] = points
        else:
            groups["eval"][name] = points
    return {group: members for group, members in groups.items() if members}


_TITLES = {
    "losses": ("Training losses", "loss"),
    "lr": ("Learning rate", "lr"),
    "timing": ("Timing", "value"),
    "eval": ("Evaluation metrics", "metric"),
}


def plot_metrics(input_path: str, output_dir: str, dpi: int = 100) -> List[str]:
    """Draw one PNG per group of :func:`group_series` into ``output_dir``; return their paths."""
    series = metric_series(read_metrics(input_path))
    groups = group_series(series)
    if not groups:
        raise ValueError(f"{input_path} has metrics lines but no numeric values to plot")
    os.makedirs(output_dir, exist_ok=True)
    written = []
    for group, members in groups.items():
        path = os.path.join(output_dir, f"{group}.png")
        title, ylabel = _TITLES[group]
        if group == "timing":  # seconds and samples/s differ by 1e5: one axis each
            draw_panels(timing_panels(members), path, title, dpi)
        else:
            draw_series(members, path, title, ylabel, dpi, log_y=(group == "lr" and _spans_decades(members)))
        written.append(path)
    logger.info("wrote %s", ", ".join(written))
    return written


# timing series -> the panel (own y axis) it is drawn in, in this order
_TIMING_PANELS = (
    ("seconds per iteration", ("time", "data_time")),
    ("samples / s", ("throughput",)),
    ("seconds left", ("eta_seconds",)),
)


def timing_panels(members: Series) -> List[Tuple[str, Series]]:
    """The timing series split by unit: step times (seconds), throughput (samples per second)
    and the time left, each ``(y label, series)``; on one linear axis the step times (hundredths
    of a second) would lie flat at 0 under a throughput in thousands. Empty panels are left out;
    a series of no known unit gets a panel of its own."""
    panels = []
    known = set()
    for label, names in _TIMING_PANELS:
        known.update(names)
        chosen = {n: members[n] for n in names if n in members}
        if chosen:
            panels.append((label, chosen))
    panels += [(name, {name: points}) for name, points in members.items() if name not in known]
    return panels


def draw_panels(panels: Sequence[Tuple[str, Series]], path: str, title: str, dpi: int = 100) -> None:
    """One subplot per ``(y label, series)`` panel, stacked, sharing the iteration axis."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 2.6 * max(1, len(panels)) + 0.6))
    FigureCanvasAgg(figure)
    first = None
    for index, (ylabel, members) in enumerate(panels):
        axes = figure.add_subplot(len(panels), 1, index + 1, sharex=first)
        first = first or axes
        _plot_lines(axes, members)
        axes.set_ylabel(ylabel)
        axes.grid(True, alpha=0.3)
        axes.legend(loc="best", fontsize="small")
        if index == 0:
            axes.set_title(title)
    if first is not None:
        figure.axes[-1].set_xlabel("iteration")
    figure.tight_layout()
    save_figure_atomic(figure, path, dpi)


def _plot_lines(axes: Any, members: Series) -> None:
    for name, points in members.items():
        iterations = [it for it, _ in points]
        values = [v for _, v in points]
        marker = "o" if len(points) <= 30 else None  # sparse series (evaluation): show points
        axes.plot(iterations, values, label=name, marker=marker, markersize=3)


def spans_decades(members: Series) -> bool:
    """Whether the positive values of ``members`` span a factor of 100 or more (then a log
    scale shows them better, as for a learning rate that warms up from 0.001 × base)."""
    return _spans_decades(members)


def _spans_decades(members: Series) -> bool:
    values = [v for points in members.values() for _, v in points if v > 0]
    return bool(values) and max(values) / min(values) >= 100


def draw_series(members: Series, path: str, title: str, ylabel: str, dpi: int = 100,
                log_y: bool = False) -> None:
    """One line per series of ``members`` against the iteration, saved as a PNG at ``path``
    (atomically, see :func:`save_figure_atomic`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 4.5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    _plot_lines(axes, members)
    axes.set_title(title)
    axes.set_xlabel("iteration")
    axes.set_ylabel(ylabel)
    if log_y:
        axes.set_yscale("log")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    save_figure_atomic(figure, path, dpi)


def draw_matrix(matrix: Any, path: str, title: str, dpi: int = 100) -> None:
    """A 2-D array as a colour image with a colour bar (a weight matrix: rows are output
    features, columns input features), saved as a PNG at ``path`` atomically."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"draw_matrix needs a 2-D array, got shape {values.shape}")
    figure = Figure(figsize=(6, 5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    image = axes.imshow(values, aspect="auto", interpolation="nearest", cmap="viridis")
    figure.colorbar(image, ax=axes)
    axes.set_title(title)
    axes.set_xlabel(f"column (of {values.shape[1]})")
    axes.set_ylabel(f"row (of {values.shape[0]})")
    figure.tight_layout()
    save_figure_atomic(figure, path, dpi)


def save_figure_atomic(figure: Any, path: str, dpi: int = 100) -> None:
    """Save ``figure`` as a PNG at ``path`` so that a reader never sees half a file: it is
    written to a temporary file in the same folder, then renamed over ``path`` (a rename within
    one file system is atomic). An image viewer refreshing the file during training therefore
    always shows the previous or the new picture."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                                         dir=folder)
    try:
        with os.fdopen(handle, "wb") as f:
            figure.savefig(f, format="png", dpi=dpi)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a plot is for everyone to view
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def image_grid(images: Any, columns: Optional[int] = None, padding: int = 2) -> Any:
    """Tile a batch of images ``[N, C, H, W]`` into one ``[C, H', W']`` float image in [0, 1].

    Each image is scaled by its own minimum and maximum (a normalized input, with values around
    0, becomes visible; a constant image becomes black), then placed on a black canvas in rows
    of ``columns`` (default: ceil(sqrt(N)), a near-square grid) with ``padding`` pixels between
    them.
    """
    import numpy as np

    batch = np.asarray(images, dtype=np.float32)
    if batch.ndim != 4 or batch.shape[0] == 0:
        raise ValueError(f"image_grid needs a non-empty batch [N, C, H, W], got shape {batch.shape}")
    n, channels, height, width = batch.shape
    columns = columns or int(math.ceil(math.sqrt(n)))
    rows = int(math.ceil(n / columns))
    low = batch.reshape(n, -1).min(axis=1).reshape(n, 1, 1, 1)
    high = batch.reshape(n, -1).max(axis=1).reshape(n, 1, 1, 1)
    span = np.where(high > low, high - low, 1.0)
    scaled = np.where(high > low, (batch - low) / span, 0.0)
    grid = np.zeros((channels, rows * height + (rows + 1) * padding,
                     columns * width + (columns + 1) * padding), dtype=np.float32)
    for index in range(n):
        row, column = divmod(index, columns)
        top = padding + row * (height + padding)
        left = padding + column * (width + padding)
        grid[:, top:top + height, left:left + width] = scaled[index]
    return grid
