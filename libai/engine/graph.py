"""The static-graph wrapper of a model, for training or for evaluation.

``GraphBase`` compiles ``model(**batch)`` into a OneFlow ``nn.Graph``. For training it also
holds the backward and the optimizer update; every technique switch is applied by the same
:class:`~libai.engine.optimizer_step.OptimizerStep` the Eager path uses (accumulation, AMP,
clipping, ZeRO), plus the two graph-only structural settings below:

* activation checkpointing on the model's repeated blocks: the modules returned by
  ``model.activation_checkpoint_modules()`` when the model defines it, else every
  ``libai.layers.TransformerLayer`` it contains;
* pipeline stages: in a multi-stage layout each module carrying a ``layer_idx`` is assigned to
  the stage of that layer; gradient-accumulation micro-batches feed the pipeline.

It lives in the engine because it *is* the training step, compiled: the Eager twin is
:class:`~libai.engine.trainer.EagerTrainer`. (``libai.models.utils.GraphBase`` is the same class,
the name LiBai configs use.)

The graph captures ``model.training`` when it is first compiled; each call puts the model in the
graph's mode (train or eval) for its duration, so both graphs compile in the right mode.
"""
import logging
from typing import Any, Iterable, List, Optional

import oneflow as flow
from oneflow import nn

from libai.engine.optimizer_step import OptimizerStep
from libai.engine.support import collective_fusion_applies
from libai.engine.trainer import sum_losses
from libai.layers import TransformerLayer

logger = logging.getLogger(__name__)

__all__ = ["GraphBase", "configure_collective_fusion"]


def configure_collective_fusion(threshold_mb: float, max_ops: int, device_type: str) -> bool:
    """Apply ``train.nccl_fusion_threshold_mb`` / ``nccl_fusion_max_ops`` to the graphs compiled
    from now on (OneFlow's process-wide ``flow.boxing.nccl`` settings): collectives up to
    ``threshold_mb`` MB, at most ``max_ops`` of them, are fused into one launch.

    Call before building a graph. They only exist for NCCL, so on the CPU nothing is set and
    the log says so. Returns whether they were applied.
    """
    if not collective_fusion_applies(True, device_type):
        logger.info(
            f"train.nccl_fusion_threshold_mb={threshold_mb} and nccl_fusion_max_ops={max_ops} are "
            f"not applicable on {device_type!r}: they tune the NCCL collectives of CUDA graphs"
        )
        return False
    flow.boxing.nccl.set_fusion_threshold_mbytes(int(threshold_mb))
    flow.boxing.nccl.set_fusion_max_ops_num(int(max_ops))
    logger.info(f"Graph collectives: fused up to {int(threshold_mb)} MB and {int(max_ops)} ops per launch")
    return True


class GraphBase(nn.Graph):
    """Args:
        model: the module to compile (a libai model, or any module returning a loss dict).
        optimizer, lr_scheduler: attached for training.
        optimizer_step: the run's OptimizerStep (built from the optimizer when omitted).
        is_train: training graph (forward + backward + update) or evaluation graph.
        activation_checkpoint: recompute the repeated blocks' activations in backward.
        zero_optimization: ``{"enabled": bool, "stage": int}``; active when data parallel > 1.
        layout: the run's ParallelLayout (for pipeline stages and ZeRO).

    The graph's debug output is switched on by the trainer from ``graph.debug``
    (``nn.Graph.debug(level)``), for whatever graph class the config names.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: Optional[flow.optim.Optimizer] = None,
        lr_scheduler: Any = None,
        optimizer_step: Any = None,
        is_train: bool = True,
        activation_checkpoint: bool = False,
        zero_optimization: Any = None,
        layout: Any = None,
        *,
        fp16: bool = False,
        grad_acc_steps: int = 1,
        zero_optim: bool = False,
        zero_stage: int = 1,
        global_mode: Any = None,
        auto_parallel_conf: Any = None,
    ) -> None:
        """``fp16``, ``grad_acc_steps``, ``zero_optim``/``zero_stage``, ``global_mode`` and
        ``auto_parallel_conf`` are LiBai's spellings (``libai.models.build_graph`` and LiBai
        configs pass them). They configure the default :class:`OptimizerStep` and ZeRO when no
        ``optimizer_step`` / ``zero_optimization`` is given; ``global_mode`` and
        ``auto_parallel_conf`` (OneFlow features newer than 0.9) must be left unset."""
        super().__init__()
        if _switched_on(global_mode):
            raise ValueError("graph.global_mode needs a newer OneFlow than 0.9; leave it unset")
        if _switched_on(auto_parallel_conf):
            raise ValueError("graph.auto_parallel needs a newer OneFlow than 0.9; leave it unset")
        if zero_optimization is None and zero_optim:
            zero_optimization = {"enabled": True, "stage": int(zero_stage)}
        # A plain list keeps nn.Graph from wrapping the eager module a second time.
        self._eager_model = [model]
        self.model = model
        self.is_train = is_train
        self._layout = layout
        if is_train:
            if optimizer is None:
                raise ValueError("a training GraphBase needs the optimizer (is_train=True)")
            step = optimizer_step or OptimizerStep(
                optimizer, grad_acc_steps=grad_acc_steps, amp=fp16,
                device_type=layout.device_type if layout is not None else "cpu")
            zero = zero_optimization or {}
            dp = layout.data_parallel_size if layout is not None else 1
            step.configure_graph(self, lr_scheduler=lr_scheduler, zero=bool(zero.get("enabled", False)),
                                 zero_stage=int(zero.get("stage", 1)), data_parallel_size=dp,
                                 device_type=layout.device_type if layout is not None else None)
            if activation_checkpoint:
                self._enable_activation_checkpointing()
        if layout is not None and layout.is_global and layout.pipeline_parallel_size > 1:
            self._assign_pipeline_stages(layout)

    # ------------------------------------------------------------------ structure
    def _checkpoint_blocks(self) -> List[nn.Module]:
        model = self.model.to(nn.Module)
        if hasattr(model, "activation_checkpoint_modules"):
            return list(model.activation_checkpoint_modules())
        return [m for m in model.modules() if isinstance(m, TransformerLayer)]

    def _enable_activation_checkpointing(self) -> None:
        blocks = self._checkpoint_blocks()
        if not blocks:
            logger.warning(
                "activation_checkpoint.enabled is set but the model has no TransformerLayer blocks "
                "and no activation_checkpoint_modules(); nothing is checkpointed"
            )
            return
        ids = {id(b) for b in blocks}
        for block in self._graph_modules():
            if id(block.to(nn.Module)) in ids:
                block.to(nn.graph.GraphModule).activation_checkpointing = True
        logger.info(f"Activation checkpointing on {len(blocks)} blocks")

    def _assign_pipeline_stages(self, layout: Any) -> None:
        for block in self._graph_modules():
            module = block.to(nn.Module)
            layer_idx = getattr(module, "layer_idx", None)
            if layer_idx is None:
                continue
            stage = layout.layer_stage(layer_idx)
            block.to(nn.graph.GraphModule).set_stage(stage, layout.stage_placement(stage))

    def _graph_modules(self) -> Iterable[Any]:
        """Every sub-block of the compiled model (proxies of the eager modules)."""
        return self.model.modules()

    # ------------------------------------------------------------------ the compiled step
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the graph with the model in the graph's mode (it is compiled on the first call,
        capturing that mode: dropout on for training, off for evaluation)."""
        module = self._eager_model[0]
        was_training = module.training
        module.train(self.is_train)
        placement = self._one_process_placement()
        if placement is not None:
            # one process: a local input is the full value; a graph cannot convert it inside
            args = tuple(_adopt(a, placement) for a in args)
            kwargs = {k: _adopt(v, placement) for k, v in kwargs.items()}
        try:
            return super().__call__(*args, **kwargs)
        finally:
            module.train(was_training)

    def _one_process_placement(self) -> Optional[flow.placement]:
        """Where local inputs go in a one-process run of global tensors (the first stage of the
        layout, or the placement of the parameters for a graph built without one); ``None``
        when inputs must come global (several processes) or local (local tensors)."""
        layout = self._layout
        if layout is not None:
            return layout.stage_placement(0) if layout.is_global and layout.world_size == 1 else None
        param = next(self._eager_model[0].parameters(), None)
        if param is not None and param.is_global and param.placement.ranks.size == 1:
            return param.placement
        return None

    def build(self, **kwargs: Any) -> Any:
        if not self.is_train:
            return self.model(**kwargs)
        outputs = self.model(**kwargs)
        loss = sum_losses(outputs)
        loss.backward()
        return {k: v for k, v in outputs.items() if "loss" in k}


def _adopt(value: Any, placement: flow.placement) -> Any:
    if not isinstance(value, flow.Tensor) or value.is_global:
        return value
    device = flow.device(placement.type)
    whole = [flow.sbp.broadcast] * placement.ranks.ndim
    return value.to(device).to_global(placement=placement, sbp=whole)


def _switched_on(setting: Any) -> bool:
    """Whether a LiBai graph setting (``None``, a bool, or a node/dict with ``enabled``) is on."""
    if setting is None or isinstance(setting, bool):
        return bool(setting)
    try:
        return bool(setting["enabled"])
    except (KeyError, TypeError):
        return bool(getattr(setting, "enabled", False))
