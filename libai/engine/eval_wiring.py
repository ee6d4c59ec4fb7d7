"""How a ``DefaultTrainer`` evaluates: the evaluation graph, the EMA weights, each test loader.

:class:`EvaluationWiring` holds what ``DefaultTrainer`` inherits for evaluation: the graph it
evaluates with (or none, where the layout cannot run one), ``_evaluate`` (what
:class:`~libai.engine.hooks.EvalHook` calls: the EMA weights when an EMA hook runs, then back to
training mode) and LiBai's classmethod ``test(cfg, test_loaders, model, evaluator=None)``.
"""
import contextlib
import logging
from collections import OrderedDict
from typing import Any, Mapping, Optional, Sequence

import oneflow as flow

from libai.engine.support import graph_evaluation_supported
from libai.utils import distributed as dist

__all__ = ["EvaluationWiring"]

# DefaultTrainer's log records keep the name they had before this module was split out
logger = logging.getLogger("libai.engine.default_trainer")


class EvaluationWiring:
    """``DefaultTrainer``'s evaluation (reads ``cfg``, ``model``, ``graph_eval``,
    ``test_loader`` and ``layout``; builds with ``build_graph``, ``build_evaluator`` and
    ``build_layout``)."""

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

    def _evaluate(self) -> Mapping[str, Any]:
        model = self.graph_eval if self.graph_eval is not None else self.model
        ema = self.get_hook("EMAHook")
        loaders = self.test_loader if isinstance(self.test_loader, (list, tuple)) else [self.test_loader]
        # each batch is a phase of the hang watchdog
        loaders = [self.watchdog.watch(loader, "evaluation batch") for loader in loaders]
        with ema.evaluation_context() if ema is not None else contextlib.nullcontext():
            results = self.test(self.cfg, loaders, model, layout=self.layout)
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
