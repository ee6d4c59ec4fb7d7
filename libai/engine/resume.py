"""Where a ``DefaultTrainer`` run starts, and what it saves to start again from.

:class:`CheckpointAndResume` holds the checkpointer the trainer saves with (model, optimizer
(Graph mode: in eager format), scheduler, trainer state, RNG, AMP state), ``resume_or_load``
(auto-resume from ``output_dir``'s newest checkpoint, libai's or LiBai's, with the sampler put
back to its position; else ``train.load_weight``; else from scratch) and, for a failed run, the
message saying what there is to resume from.
"""
import logging
from typing import Any

from libai.engine.graph_state import GraphOptimizerState
from libai.utils.checkpoint import Checkpointer
from libai.utils.rng import RNGState
from libai.utils.weight_readers import load_weight

__all__ = ["CheckpointAndResume"]

# DefaultTrainer's log records keep the name they had before this module was split out
logger = logging.getLogger("libai.engine.default_trainer")


class CheckpointAndResume:
    """``DefaultTrainer``'s checkpointer and resume logic. Reads ``cfg``, ``model``,
    ``optimizer``, ``lr_scheduler``, ``graph_train``, ``optimizer_step``, ``plan`` and
    ``train_loader``; sets ``start_iter`` and ``consumed_train_samples``."""

    def build_checkpointer(self, cfg: Any) -> Checkpointer:
        """Model, optimizer, scheduler, trainer state (iteration, hooks), RNG and AMP state."""
        optimizer: Any = self.optimizer
        if self.graph_train is not None:
            # Graph mode keeps the optimizer state inside the graph; save it in eager format.
            optimizer = GraphOptimizerState(self.graph_train, self.optimizer, self.model)
        return Checkpointer(
            self.model,
            cfg.train.output_dir,
            verify=cfg.train.checkpointer.verify,
            optimizer=optimizer,
            lr_scheduler=self.lr_scheduler,
            trainer=self,
            rng=RNGState(),
            optimizer_step=self.optimizer_step,
        )

    def resume_or_load(self, resume: bool = True) -> None:
        """With ``resume`` and a checkpoint in ``output_dir``: continue from it (model, optimizer,
        scheduler, iteration, RNG, sampler position). Otherwise load ``train.load_weight`` (model
        weights only) if set, or start from scratch. Safe to leave ``--resume`` on always."""
        if resume and self.checkpointer.has_checkpoint():
            extra = self.checkpointer.resume_or_load(None, resume=True)
            # the newest checkpoint that verifies: last_checkpoint's, or an earlier one
            path = self.checkpointer.last_loaded
            # ``iteration`` is the last completed iteration the checkpoint holds.
            self.start_iter = int(extra.get("iteration", self.iter)) + 1
            if "trainer" not in self.checkpointer.last_load_report.loaded_parts:
                # no trainer state (a checkpoint of LiBai's): its rule, iterations x global batch
                self.consumed_train_samples = self.start_iter * self.plan.batch.global_batch_size
            self._set_sampler_position(self.consumed_train_samples)
            logger.info(f"Resumed from {path}: next iteration {self.start_iter}, "
                        f"{self.consumed_train_samples} samples consumed")
            return
        if resume:
            logger.info(f"--resume: no checkpoint in {self.cfg.train.output_dir}; starting from scratch")
        weights = self.cfg.train.load_weight
        if weights:
            load_weight(self.model, weights, self.checkpointer)  # also a Hugging Face directory
            logger.info(f"Loaded model weights from {weights}; training starts at iteration 0")

    def _set_sampler_position(self, consumed: int) -> None:
        sampler = getattr(self.train_loader, "batch_sampler", None)
        if sampler is not None and hasattr(sampler, "load_state_dict"):
            sampler.load_state_dict({"consumed_samples": consumed})

    def _failure_message(self) -> str:
        """The stop reason, and what there is to resume from: only a checkpoint that exists is
        named as the last good one."""
        if self.checkpointer.has_checkpoint():
            resume = (f"The newest checkpoint, {self.checkpointer.get_checkpoint_file()}, is the last good "
                      "one: resume from it with --resume after lowering the learning rate or checking "
                      "the data")
        else:
            resume = (f"No checkpoint was saved in {self.cfg.train.output_dir} before this, so there is "
                      "nothing to resume from: start again after lowering the learning rate or "
                      "checking the data")
        return f"Training failed: {self.stop_reason}. {resume}."
