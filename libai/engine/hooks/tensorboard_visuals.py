"""TensorBoard beyond scalars: per-group learning rates, parameter and gradient histograms, and
a grid of the training images, each on its own period (``train.tensorboard``)."""
import logging
from typing import Any, Dict, Mapping, Optional

import numpy as np
import oneflow as flow

from libai.engine.hooks.batch_tap import tap_batches, untap_batches
from libai.engine.trainer import HookBase
from libai.utils import distributed as dist
from libai.utils.plot import image_grid
from libai.utils.writers import open_summary_writer, release_summary_writer, tensorboard_tag

__all__ = ["TensorboardVisuals", "rank0_numpy"]

logger = logging.getLogger(__name__)


class TensorboardVisuals(HookBase):
    """Writes to the TensorBoard folder of the run (``train.output_dir``), sharing the event file
    of the scalar writer:

    * ``lr/group0``, ``lr/group1``, ... — the learning rate each parameter group used, every
      ``lr_period`` iterations;
    * ``params/<name>`` and ``grads/<name>`` — histograms of every parameter and of its
      gradient, every ``histogram_period`` iterations. Gradients are read after the backward
      pass, before the optimizer steps (Eager mode; in Graph mode they live inside the compiled
      graph, so only parameters are shown, and a note says so once);
    * ``train_images/<field>`` — a grid of up to ``max_images`` images of each 4-D floating
      batch field ``[N, C, H, W]`` with 1 or 3 channels, every ``image_period`` iterations.

    A period of 0 switches that kind off. Everything is read, never written, so training
    computes the same with and without this hook. In a multi-process run every rank must run
    it: global tensors are gathered onto rank 0 (a collective), and only rank 0 writes.

    Args:
        log_dir: the TensorBoard folder (``tensorboard --logdir <log_dir>``).
        lr_period, histogram_period, image_period: iterations between writes (0 = never).
        max_images: images per grid.
    """

    def __init__(self, log_dir: str, lr_period: int = 20, histogram_period: int = 0,
                 image_period: int = 0, max_images: int = 16) -> None:
        for name, value in (("lr_period", lr_period), ("histogram_period", histogram_period),
                            ("image_period", image_period)):
            if int(value) < 0:
                raise ValueError(f"train.tensorboard.{name} must be >= 0 (0 = off), got {value}")
        if int(max_images) < 1:
            raise ValueError(f"train.tensorboard.max_images must be >= 1, got {max_images}")
        self._log_dir = log_dir
        self.lr_period = int(lr_period)
        self.histogram_period = int(histogram_period)
        self.image_period = int(image_period)
        self.max_images = int(max_images)
        self._writer: Any = None
        self._tapped = False
        self._notes: set = set()

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], log_dir: str,
                    log_period: int) -> Optional["TensorboardVisuals"]:
        """The hook for ``train.tensorboard`` (``lr_period=None`` means ``train.log_period``), or
        ``None`` when every period is 0."""
        lr_period = cfg.get("lr_period")
        hook = cls(log_dir, lr_period=log_period if lr_period is None else int(lr_period),
                   histogram_period=int(cfg.get("histogram_period") or 0),
                   image_period=int(cfg.get("image_period") or 0),
                   max_images=int(cfg.get("max_images") or 16))
        return hook if hook.needs_all_ranks or hook.lr_period else None

    @property
    def needs_all_ranks(self) -> bool:
        """Whether the hook gathers tensors (histograms, images), so every rank must run it."""
        return bool(self.histogram_period or self.image_period)

    # ------------------------------------------------------------------ hook events
    def before_train(self) -> None:
        if dist.is_main_process():
            try:
                self._writer = open_summary_writer(self._log_dir)
            except ImportError as e:
                logger.warning(f"TensorBoard images, histograms and per-group lr are off: {e}")
        if self.image_period:
            self._tapped = tap_batches(self.trainer) is not None
            if not self._tapped:
                logger.warning(f"{type(self.trainer).__name__} has no get_batch, so "
                               "train.tensorboard.image_period has nothing to show")

    def after_backward(self) -> None:
        step = int(self.trainer.iter)
        wrote = False
        if self.every_n_iters(self.lr_period):
            wrote |= self._write_learning_rates(step)
        if self.every_n_iters(self.histogram_period):
            wrote |= self._write_histograms(step)
        if self.every_n_iters(self.image_period):
            wrote |= self._write_images(step)
        if wrote and self._writer is not None:
            self._writer.flush()

    def after_train(self) -> None:
        if self._tapped:
            untap_batches(self.trainer)
            self._tapped = False
        if self._writer is not None:
            release_summary_writer(self._log_dir)
            self._writer = None

    # ------------------------------------------------------------------ what is written
    def _write_learning_rates(self, step: int) -> bool:
        """The lr each group used this iteration (read before ``LRScheduler`` steps)."""
        if self._writer is None:
            return False
        optimizer = getattr(self.trainer, "optimizer", None)
        for index, group in enumerate(getattr(optimizer, "param_groups", [])):
            self._writer.add_scalar(f"lr/group{index}", float(group["lr"]), step)
        return True

    def _write_histograms(self, step: int) -> bool:
        model = self.trainer.model
        any_grad = False
        for name, param in model.named_parameters():
            values = rank0_numpy(param)
            if values is not None and self._writer is not None:
                self._writer.add_histogram(f"params/{tensorboard_tag(name)}", values, step)
            # In Graph mode ``grad`` is a lazy tensor of the compiled graph: nothing to read.
            if param.grad is not None and not getattr(param.grad, "is_lazy", False):
                any_grad = True
                grads = rank0_numpy(param.grad)
                if grads is not None and self._writer is not None:
                    self._writer.add_histogram(f"grads/{tensorboard_tag(name)}", grads, step)
        if not any_grad:
            self._note("no gradients to show: in Graph mode (graph.enabled=True) they stay inside "
                       "the compiled graph, so only parameter histograms are written")
        return True

    def _write_images(self, step: int) -> bool:
        inputs = _latest_inputs(self.trainer) if self._tapped else None
        if not inputs:
            return False
        found = False
        for field, value in inputs.items():
            if not _is_image_batch(value):
                continue
            found = True
            images = rank0_numpy(value[: self.max_images] if not value.is_global else value)
            if images is not None and self._writer is not None:
                grid = image_grid(images[: self.max_images])
                self._writer.add_image(f"train_images/{tensorboard_tag(field)}", grid, step,
                                       dataformats="CHW")
        if not found:
            self._note("the batch holds no image field (a floating [N, C, H, W] tensor with 1 or "
                       "3 channels), so train.tensorboard.image_period writes nothing")
        return found

    def _note(self, message: str) -> None:
        if message not in self._notes and dist.is_main_process():
            self._notes.add(message)
            logger.info(f"TensorboardVisuals: {message}")


def _latest_inputs(trainer: Any) -> Optional[Dict[str, Any]]:
    tap = getattr(trainer, "batch_tap", None)
    return None if tap is None else tap.latest


def _is_image_batch(value: Any) -> bool:
    return (isinstance(value, flow.Tensor) and value.ndim == 4 and value.dtype.is_floating_point
            and int(value.shape[1]) in (1, 3))


def rank0_numpy(tensor: flow.Tensor) -> Optional[np.ndarray]:
    """The full value of ``tensor`` as float32 NumPy on rank 0, ``None`` on other ranks. A global
    tensor is gathered (every rank must call this, in the same order)."""
    tensor = tensor.detach()
    if tensor.is_global:
        tensor = dist.tensor_to_rank0(tensor, device=tensor.placement.type)
        if not dist.is_main_process():
            return None
        tensor = tensor.to_local()
    elif not dist.is_main_process():
        return None
    return tensor.to(flow.float32).numpy()
