"""``DefaultTrainer``: a whole training run built from a config.

``DefaultTrainer(cfg)`` builds, in order: the parallel layout, the batch sizes, the model (inside
the layout), the optimizer, the loaders, the training plan (iterations, warmup), the LR
scheduler, the step runner (Eager or Graph, from ``graph.enabled``), the checkpointer and the
hooks. Every piece comes from an overridable ``build_*`` method.

Values derived from the config (the batch triple, the parallel sizes) are computed once, by
:mod:`libai.engine.train_plan` and the layout, and handed to what needs them; the config itself
is never written back. Only the saved ``config.yaml`` records them, so that it shows what ran.
The command-line program around this class is :mod:`libai.engine.cli`.
"""
import contextlib
import copy
import inspect
import logging
import os
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import oneflow as flow

from libai.config import LazyConfig, instantiate, instantiate_with, locate, try_get_key
from libai.engine import hooks
from libai.engine.batch import place_batch
from libai.engine.graph import configure_collective_fusion
from libai.engine.graph_state import GraphOptimizerState
from libai.engine.hooks.input_check import install_input_checks
from libai.engine.optimizer_step import OptimizerStep
from libai.engine.setup import complete_config
from libai.engine.support import check_supported, graph_evaluation_supported
from libai.engine.train_plan import BatchSizes, TrainPlan, resolve_batch_sizes, resolve_iterations
from libai.engine.trainer import EagerTrainer, GraphTrainer, TrainerBase, call_run_step
from libai.utils import distributed as dist
from libai.utils.checkpoint import Checkpointer
from libai.utils.rng import RNGState, use_default_generators
from libai.utils.weight_readers import load_weight
from libai.utils.writers import CommonMetricPrinter, JSONWriter, TensorboardXWriter

__all__ = ["DefaultTrainer", "TrainingFailed"]

logger = logging.getLogger(__name__)


class TrainingFailed(RuntimeError):
    """Training stopped because the run went wrong (a hook called ``request_stop(...,
    failed=True)``, e.g. on a NaN loss). The message says why and what to resume from; the
    command line ends with it and exit status 1, so a job chain sees the failure."""


class DefaultTrainer(TrainerBase):
    """A trainer built entirely from a lazy config (see the module docstring).

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

    # ------------------------------------------------------------------ builders
    @classmethod
    def build_layout(cls, cfg: Any) -> dist.ParallelLayout:
        layout = dist.ParallelLayout.from_config(cfg.train.dist)
        logger.info(f"Parallel layout: {layout.describe()}")
        return layout

    @classmethod
    def build_model(cls, cfg: Any) -> flow.nn.Module:
        """Instantiate ``cfg.model`` under the current layout; plain modules are placed on the
        first pipeline stage (broadcast over data parallel ranks)."""
        model = instantiate(cfg.model)
        if not isinstance(model, flow.nn.Module):
            raise TypeError(f"cfg.model built a {type(model).__name__}, not a oneflow.nn.Module")
        model = dist.convert_to_distributed_default_setting(model)
        use_default_generators(model)
        num_params = sum(p.numel() for p in model.parameters())
        logger.info(f"Model {type(model).__name__}: {num_params:,} parameters")
        return model

    @classmethod
    def build_graph(cls, cfg: Any, model: flow.nn.Module, optimizer: Any = None,
                    lr_scheduler: Any = None, is_train: bool = True,
                    optimizer_step: Optional[OptimizerStep] = None) -> flow.nn.Graph:
        """The static graph for training (``graph.train_graph``) or evaluation (``graph.eval_graph``)."""
        node = cfg.graph.train_graph if is_train else cfg.graph.eval_graph
        layout = dist.current_layout() if dist.has_layout() else None
        if not is_train:
            return cls._debug_graph(cfg, instantiate_with(node, model=model, layout=layout))
        return cls._debug_graph(cfg, instantiate_with(
            node, model=model, optimizer=optimizer, lr_scheduler=lr_scheduler,
            optimizer_step=optimizer_step, layout=layout,
            zero_optimization=dict(cfg.train.zero_optimization),
            activation_checkpoint=bool(cfg.train.activation_checkpoint.enabled),
        ))

    @classmethod
    def _debug_graph(cls, cfg: Any, graph: flow.nn.Graph) -> flow.nn.Graph:
        """``graph.debug`` (>= 0) switches on OneFlow's graph debug output at that level."""
        level = int(cfg.graph.debug)
        if level >= 0:
            logger.info(f"Graph debug output on (graph.debug={level})")
            graph.debug(level)
        return graph

    @classmethod
    def _build_eval_graph(cls, cfg: Any, model: flow.nn.Module, layout: Any) -> Optional[flow.nn.Graph]:
        """``build_graph(is_train=False)``, or ``None`` (evaluate eagerly) where the layout
        cannot run an evaluation graph (:func:`graph_evaluation_supported`)."""
        if not graph_evaluation_supported(layout):
            logger.warning(
                "Evaluation runs in Eager mode: OneFlow 0.9 on the CPU aborts a pipeline-parallel "
                "graph fed one micro-batch (register.cpp:75), which is what evaluation feeds it. "
                "The weights are the training graph's, so the results are the same"
            )
            return None
        return cls.build_graph(cfg, model, is_train=False)

    @classmethod
    def build_optimizer(cls, cfg: Any, model: flow.nn.Module) -> flow.optim.Optimizer:
        from libai.optim import build_optimizer

        return build_optimizer(cfg.optim, model)

    @classmethod
    def build_lr_scheduler(cls, cfg: Any, optimizer: Any, plan: Optional[TrainPlan] = None) -> Any:
        """``train.scheduler`` with ``max_iter`` and ``warmup_iter`` filled in from the plan."""
        filled: Dict[str, Any] = {"optimizer": optimizer}
        if plan is not None:
            filled.update(max_iter=plan.max_iter, warmup_iter=plan.warmup_iter)
        return instantiate_with(cfg.train.scheduler, **filled)

    @classmethod
    def build_train_loader(cls, cfg: Any, tokenizer: Any = None) -> Tuple[Any, Any, Any]:
        """``dataloader.train`` built with the resolved batch size, the seed and the resume
        position (the config node is not changed).

        The batch size each data-parallel rank loads per step is micro batch × accumulation
        steps (:attr:`BatchSizes.per_rank_step_batch`), resolved for the active layout.
        Returns ``(train_loader, valid_loader, test_loader)``; the latter two may be None.
        """
        batch = cls._batch_sizes(cfg)
        node = cfg.dataloader.train
        # a builder that makes its datasets itself (LiBai's build_nlp_train_val_test_loader)
        # receives the dataset nodes unbuilt
        builds_own = bool(getattr(_target_of(node), "builds_own_datasets", False))
        node = _with_tokenizer(node, tokenizer, build=not builds_own)
        loaders = instantiate_with(
            node,
            train_batch_size=batch.per_rank_step_batch,
            test_batch_size=int(cfg.train.test_micro_batch_size),
            seed=int(cfg.train.seed),
            consumed_samples=int(cfg.train.consumed_train_samples or 0),
            **({"_recursive_": False} if builds_own else {}),
        )
        if not isinstance(loaders, (tuple, list)):
            loaders = (loaders, None, None)
        loaders = tuple(loaders) + (None,) * (3 - len(loaders))
        return loaders[0], loaders[1], loaders[2]

    @classmethod
    def build_test_loader(cls, cfg: Any, tokenizer: Any = None) -> List[Any]:
        nodes = cfg.dataloader.get("test", None)
        if not nodes:
            return []
        return [
            instantiate_with(_with_tokenizer(node, tokenizer),
                             test_batch_size=int(cfg.train.test_micro_batch_size), seed=int(cfg.train.seed))
            for node in nodes
        ]

    @classmethod
    def _batch_sizes(cls, cfg: Any) -> BatchSizes:
        """The batch triple for the active layout (the one ``DefaultTrainer(cfg)`` builds in),
        resolved by the same rule as the trainer's plan."""
        layout = dist.current_layout() if dist.has_layout() else cls.build_layout(cfg)
        return resolve_batch_sizes(cfg.train, layout.data_parallel_size)

    @classmethod
    def build_evaluator(cls, cfg: Any) -> Any:
        return instantiate(cfg.train.evaluation.evaluator)

    @classmethod
    def build_tokenizer(cls, cfg: Any) -> Any:
        """``cfg.tokenization``'s tokenizer (None without one), handed to every dataset node
        that takes a ``tokenizer``. As in LiBai, a model config with a ``vocab_size``
        (``model.cfg.vocab_size``) is set to the tokenizer's padded size (its vocabulary
        rounded up to ``make_vocab_size_divisible_by`` × the tensor-parallel size), so the
        embedding always covers every id the tokenizer can produce."""
        node = try_get_key(cfg, "tokenization", default=None)
        if node is None or try_get_key(node, "tokenizer", default=None) is None:
            return None
        from libai.tokenizer import build_tokenizer

        tokenizer = build_tokenizer(node)
        if not hasattr(tokenizer, "padded_vocab_size"):
            return tokenizer  # a project's own tokenizer class: its model config sizes itself
        configured = try_get_key(cfg, "model.cfg.vocab_size", default=None)
        padded = int(tokenizer.padded_vocab_size)
        if configured is not None and int(configured) != padded:
            logger.info(f"model.cfg.vocab_size: {configured} -> {padded}, the tokenizer's padded "
                        "vocabulary (tokenization.make_vocab_size_divisible_by)")
            cfg.model.cfg.vocab_size = padded
        return tokenizer

    def build_checkpointer(self, cfg: Any) -> Checkpointer:
        """Model, optimizer, scheduler, trainer state (iteration, hooks), RNG and AMP state."""
        optimizer: Any = self.optimizer
        if self.graph_train is not None:
            # Graph mode keeps the optimizer state inside the graph; save it in eager format.
            optimizer = GraphOptimizerState(self.graph_train, self.optimizer, self.model)
        return Checkpointer(
            self.model,
            cfg.train.output_dir,
            optimizer=optimizer,
            lr_scheduler=self.lr_scheduler,
            trainer=self,
            rng=RNGState(),
            optimizer_step=self.optimizer_step,
        )

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

    # ------------------------------------------------------------------ evaluation
    def _evaluate(self) -> Mapping[str, Any]:
        model = self.graph_eval if self.graph_eval is not None else self.model
        ema = self.get_hook("EMAHook")
        with ema.evaluation_context() if ema is not None else contextlib.nullcontext():
            results = self.test(self.cfg, self.test_loader, model, layout=self.layout)
        self.model.train()
        return results

    @classmethod
    def test(cls, cfg: Any, test_loaders: Sequence[Any], model: Any, evaluator: Any = None,
             layout: Optional[dist.ParallelLayout] = None) -> "OrderedDict[str, Any]":
        """Evaluate ``model`` on each loader; one loader's results are returned directly,
        several are keyed by dataset name."""
        from libai.evaluation import inference_on_dataset, print_csv_format

        if layout is None:
            layout = dist.current_layout() if dist.has_layout() else cls.build_layout(cfg)
        if not isinstance(test_loaders, (list, tuple)):
            test_loaders = [test_loaders]
        results: "OrderedDict[str, Any]" = OrderedDict()
        for idx, loader in enumerate(test_loaders):
            name = f"{type(loader.dataset).__name__}" + (f"_{idx}" if len(test_loaders) > 1 else "")
            ev = evaluator if evaluator is not None else cls.build_evaluator(cfg)
            res = inference_on_dataset(model, loader, ev, eval_iter=cfg.train.evaluation.eval_iter,
                                       layout=layout)
            results[name] = res
            if dist.is_main_process():
                logger.info(f"Evaluation results of {name}:")
                print_csv_format(res)
        if len(results) == 1:
            return list(results.values())[0]
        return results

    # ------------------------------------------------------------------ resume and train
    def resume_or_load(self, resume: bool = True) -> None:
        """With ``resume`` and a checkpoint in ``output_dir``: continue from it (model, optimizer,
        scheduler, iteration, RNG, sampler position). Otherwise load ``train.load_weight`` (model
        weights only) if set, or start from scratch. Safe to leave ``--resume`` on always."""
        if resume and self.checkpointer.has_checkpoint():
            path = self.checkpointer.get_checkpoint_file()
            extra = self.checkpointer.resume_or_load(path, resume=True)
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
        super().train(self.start_iter, self.max_iter)
        if self.stop_failed:
            raise TrainingFailed(self._failure_message())
        eval_hook = self.get_hook("EvalHook")
        return dict(eval_hook.last_results) if eval_hook is not None else {}

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


def _target_of(node: Any) -> Any:
    """The callable a node names (``None`` when it cannot be imported: building reports it)."""
    target = node.get("_target_", None) if hasattr(node, "get") else None
    if isinstance(target, str):
        try:
            return locate(target)
        except Exception:
            return None
    return target


def _takes_tokenizer(ds: Any) -> bool:
    """Whether a dataset node receives the trainer's tokenizer: it names a ``tokenizer`` key,
    or (LiBai's configs never name one; its trainer sets it on every dataset node) its target
    accepts a ``tokenizer`` argument."""
    if not hasattr(ds, "keys"):
        return False
    if "tokenizer" in ds:
        return True
    target = _target_of(ds)
    try:
        params = inspect.signature(target).parameters if target is not None else {}
    except (TypeError, ValueError):
        return False
    return "tokenizer" in params


def _with_tokenizer(node: Any, tokenizer: Any, build: bool = True) -> Any:
    """The loader node with the built tokenizer given to each dataset node that takes one
    (see :func:`_takes_tokenizer`; the dataset built with it, or with ``build=False`` left a
    node holding it)."""
    datasets = node.get("dataset", None) if tokenizer is not None else None
    if datasets is None:
        return node
    single = hasattr(datasets, "keys")

    def fill(ds: Any) -> Any:
        if not _takes_tokenizer(ds):
            return ds
        if build:
            return instantiate_with(ds, tokenizer=tokenizer)
        return {**{key: ds[key] for key in ds.keys()}, "tokenizer": tokenizer}

    filled = [fill(ds) for ds in ([datasets] if single else datasets)]
    copy = {key: node[key] for key in node.keys()}
    copy["dataset"] = filled[0] if single else filled
    return copy
