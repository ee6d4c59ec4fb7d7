"""The pieces of a run, each built from the config: what ``DefaultTrainer.build_*`` make.

:class:`ConfigBuilders` holds the classmethods ``DefaultTrainer`` inherits, LiBai's overridable
``build_*`` API: the layout, the model (inside the layout), the compiled graphs, the optimizer,
the LR scheduler, the loaders (with the batch size resolved for the layout and the trainer's
tokenizer handed to the dataset nodes that take one), the evaluator and the tokenizer. They read
the config and never write it back (except the model's vocabulary size, LiBai's rule, see
:meth:`ConfigBuilders.build_tokenizer`); none of them knows what the model is.
"""
import inspect
import logging
from typing import Any, Dict, List, Optional, Tuple

import oneflow as flow

from libai.config import instantiate, instantiate_with, locate, try_get_key
from libai.engine.optimizer_step import OptimizerStep
from libai.engine.train_plan import BatchSizes, TrainPlan, resolve_batch_sizes
from libai.utils import distributed as dist
from libai.utils.rng import use_default_generators

__all__ = ["ConfigBuilders"]

# DefaultTrainer's log records keep the name they had before this module was split out
logger = logging.getLogger("libai.engine.default_trainer")


class ConfigBuilders:
    """``DefaultTrainer``'s ``build_*`` classmethods: each makes one piece of the run from
    ``cfg`` (a subclass overrides the one it wants to change)."""

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
    node holding it), also inside a wrapper's ``dataset`` (a ``PackedDataset`` of chats)."""
    datasets = node.get("dataset", None) if tokenizer is not None else None
    if datasets is None:
        return node
    single = hasattr(datasets, "keys")

    def fill(ds: Any) -> Any:
        key, value = "tokenizer", tokenizer
        if not _takes_tokenizer(ds):
            inner = ds.get("dataset", None) if hasattr(ds, "keys") else None
            if not (hasattr(inner, "keys") and _takes_tokenizer(inner)):
                return ds
            key, value = "dataset", fill(inner)
        if build:
            return instantiate_with(ds, **{key: value})
        return {**{k: ds[k] for k in ds.keys()}, key: value}

    filled = [fill(ds) for ds in ([datasets] if single else datasets)]
    copy = {key: node[key] for key in node.keys()}
    copy["dataset"] = filled[0] if single else filled
    return copy
