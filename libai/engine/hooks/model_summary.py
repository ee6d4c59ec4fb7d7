"""Prints and saves the model summary (layers, parameters per module, output shapes) once the
first training step has shown the shapes."""
import contextlib
import logging
import os
from typing import Any, Dict, List, Mapping, Optional

import oneflow as flow

from libai.engine.hooks.batch_tap import tap_batches, untap_batches
from libai.engine.trainer import HookBase
from libai.utils import distributed as dist
from libai.utils.model_summary import ModelSummary, record_output_shapes, summarize_model

__all__ = ["ModelSummaryHook"]

logger = logging.getLogger(__name__)

# Not "model_...": names starting with "model_" are where checkpoints live, and scripts that list
# them by that prefix should not pick up the summary.
SUMMARY_FILE = "model-summary.txt"


class ModelSummaryHook(HookBase):
    """After the first step of a run: log the table of :func:`~libai.utils.model_summary.summarize_model`
    and write it to ``<output_dir>/model-summary.txt`` (rank 0).

    Output shapes are those of the first batch. In Eager mode they are recorded by forward
    hooks during the real first forward pass (removed right after it), so nothing extra runs.
    In Graph mode the compiled graph does not call module hooks, so after the first step the
    eager model is run once more on that batch, in evaluation mode and without gradients
    (this reads the weights and draws no random numbers in common layers; dropout is off in
    evaluation mode), and every module's ``training`` flag is restored afterwards. If that
    forward fails, the table is written without shapes and says why.

    Args:
        output_dir: where ``model-summary.txt`` goes.
        max_depth: list modules down to this nesting depth (None: all); deeper modules still
            count in their parents' rows and in the totals.
        output_shapes: record output shapes (False: parameter counts only).
    """

    def __init__(self, output_dir: str, max_depth: Optional[int] = 3, output_shapes: bool = True) -> None:
        self.output_dir = output_dir
        self.max_depth = None if max_depth is None else int(max_depth)
        self.output_shapes = bool(output_shapes)
        self.summary: Optional[ModelSummary] = None
        self._done = False
        self._recording: Optional[contextlib.ExitStack] = None
        self._shapes: Dict[str, str] = {}
        self._tapped = False

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], output_dir: str) -> Optional["ModelSummaryHook"]:
        """The hook for ``train.model_summary``, or ``None`` when it is switched off."""
        if not cfg.get("enabled", True):
            return None
        return cls(output_dir, max_depth=cfg.get("max_depth", 3),
                   output_shapes=bool(cfg.get("output_shapes", True)))

    @property
    def path(self) -> str:
        return os.path.join(self.output_dir, SUMMARY_FILE)

    def _graph_mode(self) -> bool:
        return getattr(self.trainer, "graph_train", None) is not None

    # ------------------------------------------------------------------ hook events
    def before_train(self) -> None:
        if self.output_shapes and self._graph_mode():
            self._tapped = tap_batches(self.trainer) is not None

    def before_step(self) -> None:
        if self._done or not self.output_shapes or self._graph_mode():
            return
        self._recording = contextlib.ExitStack()
        self._shapes = self._recording.enter_context(record_output_shapes(self.trainer.model))

    def after_backward(self) -> None:
        self._stop_recording()

    def after_step(self) -> None:
        if self._done:
            return
        self._stop_recording()
        notes: List[str] = []
        if self.output_shapes and self._graph_mode():
            self._shapes = self._graph_mode_shapes(notes)
        self._done = True
        self._release_tap()
        self.summary = summarize_model(self.trainer.model, self._shapes if self.output_shapes else None,
                                       max_depth=self.max_depth, notes=notes)
        self._write(self.summary)

    def after_train(self) -> None:
        self._stop_recording()
        self._release_tap()

    # ------------------------------------------------------------------ helpers
    def _stop_recording(self) -> None:
        if self._recording is not None:
            self._recording.close()
            self._recording = None

    def _release_tap(self) -> None:
        if self._tapped:
            untap_batches(self.trainer)
            self._tapped = False

    def _graph_mode_shapes(self, notes: List[str]) -> Dict[str, str]:
        tap = getattr(self.trainer, "batch_tap", None)
        inputs = None if tap is None else tap.latest
        if not inputs:
            notes.append("(output shapes: not recorded, the trainer has no get_batch to show the batch)")
            return {}
        model = self.trainer.model
        flags = [(module, module.training) for module in model.modules()]
        try:
            model.eval()
            with record_output_shapes(model) as shapes, flow.no_grad():
                model(**inputs)
            return dict(shapes)
        except Exception as e:  # a summary must never stop training
            notes.append(f"(output shapes: not recorded, the eager forward pass failed: {e})")
            return {}
        finally:
            for module, training in flags:
                module.training = training

    def _write(self, summary: ModelSummary) -> None:
        if not dist.is_main_process():
            return
        text = summary.format()
        logger.info(f"Model summary ({SUMMARY_FILE}):\n{text}")
        os.makedirs(self.output_dir, exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(text + "\n")
