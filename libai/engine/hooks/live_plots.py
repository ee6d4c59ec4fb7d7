"""Live plots: PNGs of the losses, learning rate, metrics and (optionally) one weight matrix,
refreshed while training runs, so a run can be watched in an image viewer instead of TensorBoard."""
import difflib
import logging
import os
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

from libai.engine.hooks.tensorboard_visuals import rank0_numpy
from libai.engine.trainer import HookBase
from libai.utils import distributed as dist
from libai.utils.plot import Series, draw_matrix, draw_series, group_series, spans_decades
from libai.utils.writers import tensorboard_tag

__all__ = ["LivePlots"]

logger = logging.getLogger(__name__)


class LivePlots(HookBase):
    """Every ``period`` iterations (and after the last), redraw into ``plots_dir``:

    * ``losses.png`` — every loss the model returns and ``total_loss``;
    * ``lr.png`` — the learning rate (log scale when it spans 100x or more);
    * ``metric_<name>.png`` — one per other scalar put in the event storage (evaluation results
      such as ``Acc@1``, scalars your code puts); timing scalars are left out;
    * ``weight_<name>.png`` — with ``weight="<parameter name>"``, that parameter as an image
      (a matrix as it is, a vector as one row, higher ranks as ``[dim0, rest]``).

    Curves come from the event storage (raw values, not smoothed; what it keeps, up to its
    history length). Each PNG is written to a temporary file and renamed over the old one, so a
    viewer never shows half a picture. Nothing is written to the model, so training is
    unchanged. Every rank must run it when ``weight`` names a global parameter (it is gathered
    onto rank 0); only rank 0 draws.

    Args:
        plots_dir: where the PNGs go (the trainer uses ``<train.output_dir>/plots``).
        period: iterations between refreshes (>= 1).
        weight: a parameter name from ``model.named_parameters()``, or None.
        dpi: image resolution.
    """

    def __init__(self, plots_dir: str, period: int = 20, weight: Optional[str] = None,
                 dpi: int = 100) -> None:
        if int(period) < 1:
            raise ValueError(f"train.live_plots.period must be >= 1, got {period}")
        self.plots_dir = plots_dir
        self.period = int(period)
        self.weight = weight or None
        self.dpi = int(dpi)
        self.refreshes = 0
        self._started = False

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], output_dir: str,
                    log_period: int) -> Optional["LivePlots"]:
        """The hook for ``train.live_plots`` (``period=None`` means ``train.log_period``), or
        ``None`` when it is not enabled."""
        if not cfg.get("enabled"):
            return None
        period = cfg.get("period")
        return cls(os.path.join(output_dir, "plots"), period=log_period if period is None else int(period),
                   weight=cfg.get("weight"))

    def before_train(self) -> None:
        if self.weight is not None:
            names = [name for name, _ in self.trainer.model.named_parameters()]
            if self.weight not in names:
                close = difflib.get_close_matches(self.weight, names, n=3)
                hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
                raise ValueError(
                    f"train.live_plots.weight={self.weight!r} is not a parameter of the model.{hint} "
                    "(names as in model.named_parameters(); see output_dir/model-summary.txt)")
        self._started = True

    def after_step(self) -> None:
        if self.every_n_iters(self.period) or self.is_last_iter():
            self.refresh(self.trainer.iter)

    def after_train(self) -> None:
        if self._started:  # not when before_train refused the settings
            # the final state, including an evaluation put after the last step; after the loop
            # ``trainer.iter`` counts the completed iterations
            self.refresh(self.trainer.iter - 1)

    def refresh(self, iteration: int) -> List[str]:
        """Redraw every plot now, after ``iteration`` (shown in the weight's title); returns the
        paths written (empty on ranks other than 0)."""
        matrix = self._weight_matrix()
        if not dist.is_main_process():
            return []
        written = []
        groups = group_series(_storage_series(self.trainer.storage))
        if "losses" in groups:
            written.append(self._draw(groups["losses"], "losses.png", "Training losses", "loss"))
        if "lr" in groups:
            written.append(self._draw(groups["lr"], "lr.png", "Learning rate", "lr",
                                      log_y=spans_decades(groups["lr"])))
        for name, points in groups.get("eval", {}).items():
            written.append(self._draw({name: points}, f"metric_{tensorboard_tag(name)}.png", name, name))
        if matrix is not None:
            path = os.path.join(self.plots_dir, f"weight_{tensorboard_tag(self.weight)}.png")
            draw_matrix(matrix, path, f"{self.weight} after iteration {iteration}", self.dpi)
            written.append(path)
        self.refreshes += 1
        return written

    def _draw(self, members: Series, filename: str, title: str, ylabel: str,
              log_y: bool = False) -> str:
        path = os.path.join(self.plots_dir, filename)
        draw_series(members, path, title, ylabel, self.dpi, log_y=log_y)
        return path

    def _weight_matrix(self) -> Optional[np.ndarray]:
        if self.weight is None:
            return None
        param = dict(self.trainer.model.named_parameters())[self.weight]
        values = rank0_numpy(param)
        if values is None:
            return None
        if values.ndim == 0:
            return values.reshape(1, 1)
        return values.reshape(values.shape[0], -1) if values.ndim != 1 else values.reshape(1, -1)


def _storage_series(storage: Any) -> Series:
    """``name -> [(iteration, value), ...]`` of every history in the storage, a repeated
    iteration keeping its last value."""
    series: Dict[str, List[Any]] = {}
    for name, history in storage.histories().items():
        points: Dict[int, float] = {}
        for value, iteration in history.values():
            points[int(iteration)] = float(value)
        series[name] = sorted(points.items())
    return series
