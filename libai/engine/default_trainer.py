"""``DefaultTrainer``: a whole training run built from a config.

``DefaultTrainer(cfg)`` builds, in order: the parallel layout, the batch sizes, the model (inside
the layout), the optimizer, the loaders, the training plan (iterations, warmup), the LR
scheduler, the step runner (Eager or Graph, from ``graph.enabled``), the checkpointer and the
hooks. Every piece comes from an overridable ``build_*`` method.

This module answers "in what order is a run put together, and how does each step reach the
step runner"; the rest of the class comes from modules with one question each:

* the ``build_*`` classmethods (each piece from ``cfg``): :mod:`libai.engine.builders`;
* the hook list and the writers: :mod:`libai.engine.hook_list`;
* the checkpointer, ``resume_or_load`` and what a failed run can resume from:
  :mod:`libai.engine.resume`;
* the evaluation graph, ``_evaluate`` and ``test``: :mod:`libai.engine.eval_wiring`.

Values derived from the config (the batch triple, the parallel sizes) are computed once, by
:mod:`libai.engine.train_plan` and the layout, and handed to what needs them; the config itself
is never written back. Only the saved ``config.yaml`` records them, so that it shows what ran.
The command-line program around this class is :mod:`libai.engine.cli`.
"""
import copy
import logging
import os
from typing import Any, Callable, Dict, Mapping, Optional

import oneflow as flow

from libai.config import LazyConfig
from libai.engine.batch import place_batch
from libai.engine.builders import ConfigBuilders
from libai.engine.eval_wiring import EvaluationWiring
from libai.engine.graph import configure_collective_fusion
from libai.engine.hook_list import DefaultHooks
from libai.engine.hooks.input_check import install_input_checks
from libai.engine.optimizer_step import OptimizerStep
from libai.engine.resume import CheckpointAndResume
from libai.engine.setup import complete_config
from libai.engine.step_runners import EagerTrainer, GraphTrainer, call_run_step
from libai.engine.support import check_supported
from libai.engine.train_loop import TrainerBase
from libai.engine.train_plan import resolve_batch_sizes, resolve_iterations
from libai.engine.watchdog import NO_WATCHDOG, Watchdog, WatchdogSettings
from libai.utils import distributed as dist

__all__ = ["DefaultTrainer", "TrainingFailed"]

logger = logging.getLogger(__name__)


class TrainingFailed(RuntimeError):
    """Training stopped because the run went wrong (a hook called ``request_stop(...,
    failed=True)``, e.g. on a NaN loss). The message says why and what to resume from; the
    command line ends with it and exit status 1, so a job chain sees the failure."""


class DefaultTrainer(ConfigBuilders, DefaultHooks, CheckpointAndResume, EvaluationWiring,
                     TrainerBase):
    """A trainer built entirely from a lazy config (see the module docstring; the methods
    it inherits are listed there, by the module each lives in).

    A subclass may override any ``build_*`` method, or replace the step runner after
    construction (``self._trainer = MyEagerTrainer(self.model, self.train_loader, self.optimizer)``).
    """

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.cfg = cfg = complete_config(cfg)  # nothing to do when main() completed it
        self.layout = self.build_layout(cfg)
        batch = resolve_batch_sizes(cfg.train, self.layout.data_parallel_size)
        _warn_unused_settings(cfg)
        with self.layout:
            flow.manual_seed(int(cfg.train.seed))
            # the tokenizer first: it may set the model's vocabulary size (LiBai's order)
            self.tokenizer = self.build_tokenizer(cfg)
            self.model = self.build_model(cfg)
            install_input_checks(self.model)  # data/config mistakes raise instead of aborting
            self.optimizer = self.build_optimizer(cfg, self.model)
            self.train_loader, valid_loader, test_loader = self.build_train_loader(cfg, self.tokenizer)
            # held-out parts cut from the training corpus (``splits``) are evaluated first,
            # then the loaders of ``dataloader.test``
            held_out = [loader for loader in (valid_loader, test_loader) if loader is not None]
            self.test_loader = (
                held_out + self.build_test_loader(cfg, self.tokenizer)
                if cfg.train.evaluation.enabled else []
            )
        self.plan = resolve_iterations(cfg.train, batch, _dataset_size(self.train_loader))
        logger.info(f"Training plan: {self.plan.describe()}")
        self.lr_scheduler = self.build_lr_scheduler(cfg, self.optimizer, self.plan)
        self.optimizer_step = self._build_optimizer_step(cfg)
        self.graph_train = self.graph_eval = None
        self._trainer = self._build_step_runner(cfg)
        self.consumed_train_samples = int(cfg.train.consumed_train_samples or 0)
        self.checkpointer = self.build_checkpointer(cfg)
        self.start_iter = int(cfg.train.start_iter or 0)
        self.max_iter = self.plan.max_iter
        self.register_hooks(self.build_hooks())
        self._write_resolved_config()

    # ------------------------------------------------------------------ step runner
    def _build_optimizer_step(self, cfg: Any) -> OptimizerStep:
        t = cfg.train
        notes = check_supported(
            graph_enabled=bool(cfg.graph.enabled), amp=bool(t.amp.enabled),
            zero=bool(t.zero_optimization.enabled), zero_stage=int(t.zero_optimization.stage),
            data_parallel_size=self.layout.data_parallel_size, device_type=self.layout.device_type,
            tensor_parallel_size=self.layout.tensor_parallel_size,
            pipeline_parallel_size=self.layout.pipeline_parallel_size,
            grad_acc_steps=self.plan.batch.num_accumulation_steps,
        )
        for note in notes:
            logger.warning(note)
        return OptimizerStep(self.optimizer, grad_acc_steps=self.plan.batch.num_accumulation_steps,
                             amp=bool(t.amp.enabled), device_type=self.layout.device_type)

    def _build_step_runner(self, cfg: Any) -> TrainerBase:
        if cfg.graph.enabled:
            configure_collective_fusion(cfg.train.nccl_fusion_threshold_mb, cfg.train.nccl_fusion_max_ops,
                                        self.layout.device_type)
            with self.layout:
                self.graph_train = self.build_graph(cfg, self.model, self.optimizer, self.lr_scheduler,
                                                    is_train=True, optimizer_step=self.optimizer_step)
                if self.test_loader:
                    self.graph_eval = self._build_eval_graph(cfg, self.model, self.layout)
            runner: TrainerBase = GraphTrainer(self.graph_train, self.train_loader,
                                               grad_acc_steps=self.plan.batch.num_accumulation_steps,
                                               layout=self.layout)
        else:
            if cfg.train.activation_checkpoint.enabled:
                logger.warning(
                    "activation_checkpoint.enabled applies in Graph mode (graph.enabled=True); "
                    "OneFlow 0.9 eager mode keeps all activations, so it has no effect here"
                )
            runner = EagerTrainer(self.model, self.train_loader, self.optimizer,
                                  grad_acc_steps=self.plan.batch.num_accumulation_steps,
                                  optimizer_step=self.optimizer_step, layout=self.layout)
        return runner

    @property
    def runner(self) -> Any:
        """The step runner, ``self._trainer`` (LiBai's name; a subclass may assign its own),
        connected to this trainer: its hooks get ``after_backward``, batches are placed by this
        layout, and a runner that made a plain :class:`OptimizerStep` for itself uses the
        configured one (AMP, clipping, NaN skipping) instead."""
        runner = self._trainer
        connect = getattr(runner, "connect", None)
        if connect is not None:
            connect(self)
        return runner

    def run_step(self) -> None:
        """LiBai's contract: ``self._trainer.run_step(self.get_batch, train.input_placement_device)``
        (a runner whose ``run_step`` takes fewer arguments gets fewer), inside this layout."""
        runner = self.runner
        runner.iter = self.iter
        with self.layout:
            call_run_step(runner, self.get_batch, self.cfg.train.input_placement_device)
        self.consumed_train_samples += self.plan.batch.global_batch_size

    @staticmethod
    def get_batch(data: Any, input_placement_device: Optional[str] = "cuda",
                  mixup_func: Optional[Callable[..., Any]] = None) -> Dict[str, Any]:
        """A loader batch (an Instance of DistTensorData) as the model's keyword arguments,
        placed by the active layout (LiBai's signature; see :func:`libai.engine.batch.place_batch`
        for what ``input_placement_device`` and ``mixup_func`` do). Override it to change the
        batch before the model sees it."""
        return place_batch(data, dist.current_layout(), input_placement_device, mixup_func)

    # ------------------------------------------------------------------ train and its state
    def train(self) -> Dict[str, float]:
        """Train from ``start_iter`` to ``max_iter``; returns the last evaluation's results.

        Raises :class:`TrainingFailed` when a hook stopped the run as failed (a NaN loss).
        """
        if self.start_iter >= self.max_iter:
            logger.info(
                f"Training is already complete: the checkpoint is at iteration {self.start_iter - 1} "
                f"of {self.max_iter}. Nothing to do (use --eval-only to evaluate it, or raise train.train_iter)."
            )
            return {}
        self.watchdog = self.build_watchdog(self.cfg)
        try:
            super().train(self.start_iter, self.max_iter)
        finally:
            self.watchdog.stop()
            self.watchdog = NO_WATCHDOG
        if self.stop_failed:
            raise TrainingFailed(self._failure_message())
        eval_hook = self.get_hook("EvalHook")
        return dict(eval_hook.last_results) if eval_hook is not None else {}

    @staticmethod
    def build_watchdog(cfg: Any) -> Any:
        """This rank's hang watchdog (``train.watchdog``, ``$LIBAI_WATCHDOG``), started; the
        trainer marks its phases. Off: :data:`~libai.engine.watchdog.NO_WATCHDOG`."""
        settings = WatchdogSettings.from_config(cfg.train.watchdog)
        if not settings.enabled:
            return NO_WATCHDOG
        return Watchdog(settings, cfg.train.output_dir, dist.get_rank(), dist.get_world_size()).start()

    def state_dict(self) -> Dict[str, Any]:
        state = super().state_dict()
        state["consumed_train_samples"] = self.consumed_train_samples
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)
        self.consumed_train_samples = int(state.get("consumed_train_samples", 0))

    def resolved_config(self) -> Any:
        """A copy of the config with the values this run resolved written in (parallel sizes,
        device, pipeline stages, batch triple): reloading it reproduces the run on any machine.
        ``self.cfg`` itself keeps what the user wrote."""
        cfg = copy.deepcopy(self.cfg)
        d = cfg.train.dist
        d.data_parallel_size = self.layout.data_parallel_size
        d.device_type = self.layout.device_type
        if self.layout.pipeline_parallel_size > 1 and self.layout.stage_of_each_layer:
            d.custom_pipeline_stage_id = list(self.layout.stage_of_each_layer)
        cfg.train.num_accumulation_steps = self.plan.batch.num_accumulation_steps
        cfg.train.global_batch_size = self.plan.batch.global_batch_size
        return cfg

    def _write_resolved_config(self) -> None:
        """Save :meth:`resolved_config` as ``output_dir/config.yaml`` (rank 0)."""
        path = os.path.join(self.cfg.train.output_dir, "config.yaml")
        if dist.is_main_process() and os.path.isdir(self.cfg.train.output_dir):
            LazyConfig.save(self.resolved_config(), path)


def _warn_unused_settings(cfg: Any) -> None:
    """Settings LiBai configs carry that this run cannot honour, said once at start-up."""
    if int(cfg.train.consumed_valid_samples or 0):
        logger.warning(
            f"train.consumed_valid_samples={cfg.train.consumed_valid_samples} has no effect: every "
            "evaluation reads each test set from its first sample, so there is no evaluation "
            "position to resume (training resumes from train.consumed_train_samples). Leave it at 0"
        )


def _dataset_size(loader: Any) -> Optional[int]:
    try:
        return len(loader.dataset)
    except (AttributeError, TypeError):
        return None

