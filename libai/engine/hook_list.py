"""Which hooks a ``DefaultTrainer`` runs, in which order, and the writers they feed.

:class:`DefaultHooks` holds ``build_hooks`` (the named order: timer → LR → NaN check → EMA →
preemption → checkpoint → eval → best → early stopping → writers → visuals) and
``build_writers``, the methods ``DefaultTrainer`` inherits and a subclass may override. They read
what the trainer built before them: ``cfg``, ``model``, ``checkpointer``, ``test_loader``,
``plan`` and ``max_iter``.
"""
import logging
import os
from typing import Any, List, Optional

from libai.engine import hooks
from libai.utils import distributed as dist
from libai.utils.writers import CommonMetricPrinter, JSONWriter, TensorboardXWriter

__all__ = ["DefaultHooks"]

# DefaultTrainer's log records keep the name they had before this module was split out
logger = logging.getLogger("libai.engine.default_trainer")


class DefaultHooks:
    """``DefaultTrainer``'s hook list and writers, built from ``cfg.train``."""

    def build_hooks(self) -> List[hooks.HookBase]:
        """The hooks, in this order: timer → LR → NaN check → EMA → preemption → checkpoint →
        eval → best → early stopping → writers → visuals (summary, TensorBoard extras, live plots)."""
        cfg = self.cfg.train
        ev = cfg.evaluation
        result: List[Optional[hooks.HookBase]] = [
            hooks.IterationTimer(period=cfg.log_period),
            hooks.LRScheduler(),
            hooks.NaNLossHook.from_config(
                {**cfg.nan_check, "period": cfg.nan_check.period or cfg.log_period},
                graph_enabled=bool(self.cfg.graph.enabled)),
            hooks.EMAHook.from_config(self.model, cfg.ema),
            hooks.PreemptionHandler(),
            hooks.PeriodicCheckpointer(self.checkpointer, cfg.checkpointer.period,
                                       max_to_keep=cfg.checkpointer.max_to_keep),
        ]
        if self.test_loader:  # evaluation enabled and something to evaluate
            result.append(hooks.EvalHook(ev.eval_period, self._evaluate))
            result.append(hooks.BestCheckpointer(ev.eval_period, self.checkpointer, ev.eval_metric, ev.eval_mode))
            if cfg.early_stopping.enabled:
                result.append(hooks.EarlyStopping(ev.eval_period, ev.eval_metric, ev.eval_mode,
                                                  patience=cfg.early_stopping.patience))
        if dist.is_main_process():
            result.append(hooks.PeriodicWriter(self.build_writers(), period=cfg.log_period))
        result.extend(self._build_visual_hooks())
        return [h for h in result if h is not None]

    def _build_visual_hooks(self) -> List[Optional[hooks.HookBase]]:
        """``train.model_summary``, ``train.tensorboard`` and ``train.live_plots`` (see
        docs/training_visuals.md). They gather global tensors, so they run on every rank."""
        cfg = self.cfg.train
        out = cfg.output_dir
        return [
            hooks.ModelSummaryHook.from_config(cfg.model_summary, out),
            hooks.TensorboardVisuals.from_config(cfg.tensorboard, out, cfg.log_period),
            hooks.LivePlots.from_config(cfg.live_plots, out, cfg.log_period),
        ]

    def build_writers(self) -> List[Any]:
        """Console line, ``metrics.json`` and (when tensorboardX is installed) TensorBoard."""
        out = self.cfg.train.output_dir
        samples = self.plan.batch.global_batch_size
        writers: List[Any] = [
            CommonMetricPrinter(self.max_iter, samples_per_iter=samples),
            JSONWriter(os.path.join(out, "metrics.json"), samples_per_iter=samples),
        ]
        try:  # tensorboardX is an optional extra; the writer imports it when built
            writers.append(TensorboardXWriter(out))
        except ImportError as e:
            logger.info(f"TensorBoard logging is off ({e})")
        return writers
