"""Checks of the config alone: unknown keys, the batch triple, parallel sizes, evaluation.

Each check returns a list of :class:`~libai.plan.problems.Problem` instead of raising, so a
preflight reports every problem at once. The rules are the trainer's (``libai.engine``'s batch
triple and iteration rules, ``ParallelLayout``'s world-size rule); the messages name the key and
the fix.
"""
import copy
import difflib
import functools
import inspect
from typing import Any, Iterator, List, Optional, Tuple

from libai.config import get_config, merge_with_defaults
from libai.config.instantiate import TARGET_KEY
from libai.config.targets import locate
from libai.plan.problems import Problem

__all__ = ["complete", "check_unknown_keys", "check_node_arguments", "check_batch", "check_world",
           "check_evaluation", "resolve_dp"]


def complete(cfg: Any) -> Tuple[Any, List[Problem]]:
    """``cfg`` with ``train`` and ``graph`` completed by the defaults (as the trainer does) and
    the keys the defaults do not know, as errors with the nearest known key. ``cfg`` itself is
    changed in place (its ``train``/``graph`` replaced by the completed nodes)."""
    problems: List[Problem] = []
    for field in ("model", "train", "optim", "dataloader"):
        if field not in cfg:
            problems.append(Problem(field, f"the config defines no '{field}'; a training config "
                                           "needs model, train, optim, dataloader (and graph)"))
    if "graph" not in cfg:
        cfg.graph = copy.deepcopy(_defaults("common/models/graph.py", "graph"))
    for field, default_file in (("train", "common/train.py"), ("graph", "common/models/graph.py")):
        if field not in cfg:
            continue
        merged, unknown = merge_with_defaults(cfg[field], _defaults(default_file, field), path=field)
        cfg[field] = merged
        for item in unknown:  # an old LiBai name only warns: LiBai's own configs carry them
            problems.append(Problem(item.key, item.message(), "warning" if item.legacy else "error"))
    return cfg, problems


@functools.lru_cache(maxsize=None)
def _defaults(path: str, field: str) -> Any:
    """A built-in default node, loaded once (merging reads it and never changes it)."""
    return getattr(get_config(path), field)


def check_unknown_keys(cfg: Any) -> List[Problem]:
    """Arguments of every ``LazyCall`` node in ``model``, ``optim``, ``dataloader`` and
    ``train`` that its target does not take (with the closest name it does take)."""
    problems: List[Problem] = []
    for field in ("model", "optim", "dataloader", "train"):
        if field in cfg:
            problems += check_node_arguments(cfg[field], field)
    return problems


def check_node_arguments(node: Any, path: str) -> List[Problem]:
    problems = []
    for sub_path, sub in _nodes(node, path):
        params = _parameters(sub[TARGET_KEY])
        if params is None:
            continue
        for key in sub.keys():
            if key == TARGET_KEY or key.startswith("_") or key in params:
                continue
            close = difflib.get_close_matches(key, sorted(params), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; it takes {sorted(params)}"
            problems.append(Problem(f"{sub_path}.{key}", f"{_name(sub[TARGET_KEY])} takes no argument "
                                                         f"'{key}'{hint}"))
    return problems


def _nodes(node: Any, path: str) -> Iterator[Tuple[str, Any]]:
    if hasattr(node, "keys"):
        if TARGET_KEY in node:
            yield path, node
        for key in node.keys():
            if key != TARGET_KEY:
                yield from _nodes(node[key], f"{path}.{key}")
    elif isinstance(node, (list, tuple)) or type(node).__name__ == "ListConfig":
        for i, item in enumerate(node):
            yield from _nodes(item, f"{path}.{i}")


def _parameters(target: Any) -> Optional[set]:
    """Keyword names ``target`` accepts, or None when it accepts any (``**kwargs``) or cannot
    be inspected (an unimportable target is reported when the model is built)."""
    try:
        obj = locate(target) if isinstance(target, str) else target
        fn = obj.__init__ if inspect.isclass(obj) else obj
        sig = inspect.signature(fn)
    except Exception:
        return None
    if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {n for n, p in sig.parameters.items() if n != "self" and p.kind != p.VAR_POSITIONAL}


def _name(target: Any) -> str:
    return target if isinstance(target, str) else getattr(target, "__qualname__", str(target))


def _quotient(total: int, divisor: int, key: str, message: str) -> Tuple[Optional[int], List[Problem]]:
    """``total // divisor`` when it divides (a size left unset is filled in this way), else the
    problem ``message`` on ``key``."""
    if total % divisor:
        return None, [Problem(key, message)]
    return total // divisor, []


def _if_equal(value: Any, product: int, expected: int, key: str, message: str) -> Tuple[Any, List[Problem]]:
    """``value`` when the sizes multiply to ``expected``, else the problem ``message`` on ``key``."""
    if product != expected:
        return None, [Problem(key, message)]
    return value, []


def resolve_dp(dist: Any, world_size: int) -> Tuple[Optional[int], List[Problem]]:
    """The data-parallel size the launch gives, or the problems that prevent one."""
    problems = []
    tp = int(dist.get("tensor_parallel_size") or 1)
    pp = int(dist.get("pipeline_parallel_size") or 1)
    dp = dist.get("data_parallel_size")
    for name, value in (("data", dp), ("tensor", tp), ("pipeline", pp)):
        if value is not None and int(value) < 1:
            problems.append(Problem(f"train.dist.{name}_parallel_size", f"must be >= 1, got {value}"))
    if problems:
        return None, problems
    if dp is None:
        return _quotient(world_size, tp * pp, "train.dist", (
            f"world size {world_size} is not divisible by tensor_parallel_size ({tp}) × "
            f"pipeline_parallel_size ({pp}) = {tp * pp}; launch a multiple of {tp * pp} devices "
            "or change the sizes"))
    dp = int(dp)
    return _if_equal(dp, dp * tp * pp, world_size, "train.dist", (
        f"data_parallel_size ({dp}) × tensor_parallel_size ({tp}) × pipeline_parallel_size "
        f"({pp}) = {dp * tp * pp}, but the launch has {world_size} device(s); launch "
        f"{dp * tp * pp} (--world-size or --nodes × --devices-per-node) or set "
        f"train.dist.data_parallel_size=None to fill the world"))


def check_world(world_size: int, nodes: Optional[int], per_node: Optional[int]) -> List[Problem]:
    if nodes is not None and per_node is not None and nodes * per_node != world_size:
        return [Problem("--world-size", f"--nodes {nodes} × --devices-per-node {per_node} = "
                                         f"{nodes * per_node}, not --world-size {world_size}")]
    return []


def check_batch(train: Any, dp: int) -> Tuple[Optional[Tuple[int, int, int]], List[Problem]]:
    """``(micro, accumulation, global)`` by the API's rule, or the problems (all of them)."""
    micro, acc, glob = (train.get("train_micro_batch_size"), train.get("num_accumulation_steps"),
                        train.get("global_batch_size"))
    if micro is None or int(micro) < 1:
        return None, [Problem("train.train_micro_batch_size",
                              f"must be a positive integer, got {micro}")]
    micro = int(micro)
    if acc is not None and int(acc) < 1:
        return None, [Problem("train.num_accumulation_steps", f"must be >= 1, got {acc}")]
    if glob is None:
        acc = 1 if acc is None else int(acc)
        return (micro, acc, micro * acc * dp), []
    glob = int(glob)
    if acc is None:
        acc, problems = _quotient(glob, micro * dp, "train.global_batch_size", (
            f"{glob} is not a multiple of train_micro_batch_size ({micro}) × "
            f"data_parallel_size ({dp}) = {micro * dp}; choose a global batch that is, or "
            "set num_accumulation_steps"))
        return (None if acc is None else (micro, acc, glob)), problems
    acc = int(acc)
    return _if_equal((micro, acc, glob), micro * acc * dp, glob, "train.global_batch_size", (
        f"inconsistent batch sizes: global_batch_size ({glob}) must equal "
        f"train_micro_batch_size ({micro}) × num_accumulation_steps ({acc}) × "
        f"data_parallel_size ({dp}) = {micro * acc * dp}; set two of them and leave the "
        "third None"))


_METRIC_OF = {"PPLEvaluator": ["PPL"], "BLEUEvaluator": ["bleu", "BLEU"]}


def check_evaluation(cfg: Any) -> List[Problem]:
    """Evaluation settings against the evaluator and the test data."""
    ev = cfg.train.evaluation
    if not ev.get("enabled"):
        return []
    problems = []
    if not cfg.get("dataloader") or not cfg.dataloader.get("test"):
        problems.append(Problem("train.evaluation.enabled", (
            "evaluation is on but dataloader.test is empty; add a test loader or set "
            "train.evaluation.enabled=False")))
    if ev.get("eval_mode") not in ("max", "min"):
        problems.append(Problem("train.evaluation.eval_mode",
                                f"must be 'max' or 'min', got {ev.get('eval_mode')!r}"))
    period = ev.get("eval_period")
    if period is None or int(period) < 1:
        problems.append(Problem("train.evaluation.eval_period", f"must be >= 1, got {period}"))
    metrics = _evaluator_metrics(ev.get("evaluator"))
    metric = ev.get("eval_metric")
    if metrics is not None and metric not in metrics:
        problems.append(Problem("train.evaluation.eval_metric", (
            f"{metric!r} is not a metric the evaluator reports ({metrics}); set "
            f"train.evaluation.eval_metric={metrics[0]!r}")))
    if metrics == ["PPL"] and ev.get("eval_mode") == "max":
        problems.append(Problem("train.evaluation.eval_mode",
                                "PPL is better when lower: set train.evaluation.eval_mode='min'"))
    return problems


def _evaluator_metrics(node: Any) -> Optional[List[str]]:
    """Metric names an evaluator node reports, where they follow from its arguments."""
    if node is None or not hasattr(node, "get"):
        return None
    target = node.get(TARGET_KEY)
    name = target.rsplit(".", 1)[-1] if isinstance(target, str) else getattr(target, "__name__", "")
    if name == "ClsEvaluator":
        topk = node.get("topk", (1, 5))
        return [f"Acc@{int(k)}" for k in topk]
    return _METRIC_OF.get(name)
