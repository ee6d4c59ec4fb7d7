"""What this build of OneFlow can do, in one place: every "does X work in mode Y" rule.

OneFlow 0.9 cannot do every technique in every mode, and some of what it cannot do aborts the
process instead of raising. Each rule is written once here, as a function of plain values
(mode, device, parallel sizes), and the rest of the engine asks it:

* :func:`check_supported`: the technique switches (Graph/Eager, AMP, ZeRO, model parallelism)
  at start-up; raises on a combination that cannot work, returns notes for the ones that run
  differently from what was asked;
* :func:`zero_applies`: whether ZeRO really shards the optimizer state;
* :func:`graph_evaluation_supported`: whether evaluation may run as a compiled graph;
* :func:`check_nan_action`: which reaction to a NaN loss the mode allows;
* :func:`collective_fusion_applies`: whether ``train.nccl_fusion_*`` reach a collective.
"""
from typing import Any, List

__all__ = [
    "NAN_ACTIONS",
    "check_nan_action",
    "check_supported",
    "collective_fusion_applies",
    "graph_evaluation_supported",
    "zero_applies",
]

NAN_ACTIONS = ("stop", "skip")


def check_supported(graph_enabled: bool, amp: bool, zero: bool, zero_stage: int,
                    data_parallel_size: int, device_type: str, tensor_parallel_size: int = 1,
                    pipeline_parallel_size: int = 1, grad_acc_steps: int = 1) -> List[str]:
    """Validate the technique switches for a mode; return notes to log once.

    Raises ``ValueError`` naming the supported combination when a switch cannot work.
    """
    notes: List[str] = []
    model_parallel = tensor_parallel_size > 1 or pipeline_parallel_size > 1
    if graph_enabled and device_type == "cpu" and model_parallel and grad_acc_steps < 2:
        # Seen here: OneFlow 0.9 aborts the whole job (register.cpp:75 "Check failed:
        # separated_header_mem_ptr() == nullptr") for such a graph fed one micro-batch per step.
        raise ValueError(
            "Graph mode with tensor or pipeline parallelism on the CPU needs at least 2 micro-batches "
            "per step in OneFlow 0.9 (one aborts the process). Set train.num_accumulation_steps=2 "
            "(or more; for pipeline parallelism about 2 × pipeline_parallel_size keeps stages busy), "
            "or use Eager mode (graph.enabled=False)"
        )
    if zero:
        notes.extend(_zero_notes(graph_enabled, zero_stage, data_parallel_size, device_type))
    if amp and device_type == "cpu":
        if graph_enabled:
            notes.append(
                "AMP on the CPU: the graph's AMP pass is enabled, but OneFlow's CPU kernels compute "
                "in fp32, so this run is effectively fp32 (AMP pays off on CUDA)"
            )
        else:
            notes.append(
                "AMP on the CPU: OneFlow 0.9 has no CPU autocast, so this eager run computes in "
                "fp32 and no loss scaling is applied (AMP is honoured on CUDA)"
            )
    return notes


def _zero_notes(graph_enabled: bool, zero_stage: int, data_parallel_size: int, device_type: str) -> List[str]:
    if zero_stage not in (1, 2, 3):
        raise ValueError(f"train.zero_optimization.stage must be 1, 2 or 3, got {zero_stage}")
    if data_parallel_size == 1:
        return ["ZeRO is enabled but data_parallel_size is 1: it has no effect"]
    if not graph_enabled:
        raise ValueError(
            "train.zero_optimization.enabled=True needs Graph mode in OneFlow 0.9 (eager ZeRO "
            "is not available). Set graph.enabled=True, or zero_optimization.enabled=False"
        )
    if not zero_applies(True, data_parallel_size, device_type):
        return [
            "ZeRO on the CPU: OneFlow 0.9's CPU transport aborts the process (register.cpp:75) "
            "as soon as optimizer state is really sharded, so this run trains without ZeRO "
            "(it is honoured on CUDA)"
        ]
    return []


def zero_applies(enabled: bool, data_parallel_size: int, device_type: str) -> bool:
    """Whether ZeRO really shards this run's optimizer state (the one place that decides).

    It needs more than one data-parallel rank (nothing to shard over otherwise) and CUDA: on the
    CPU, every OneFlow 0.9 graph whose optimizer state was really sharded aborted in the CPU
    transport (``register.cpp:75``), whatever the stage or number of micro-batches.
    :func:`check_supported` reports the cases where a requested ZeRO does not apply.
    """
    return bool(enabled) and data_parallel_size > 1 and device_type != "cpu"


def graph_evaluation_supported(layout: Any) -> bool:
    """Whether an evaluation graph can run under ``layout``.

    Not for pipeline parallelism on the CPU: OneFlow 0.9's CPU transport aborts the process
    (``register.cpp:75``, no Python exception) when a pipeline-parallel graph is fed one
    micro-batch per call, and an evaluation graph always is (training graphs get several, see
    :func:`check_supported`). The model then evaluates eagerly, with the same weights, so the
    results are the same.
    """
    if layout is None:
        return True
    return not (layout.device_type == "cpu" and layout.is_global and layout.pipeline_parallel_size > 1)


def check_nan_action(action: str, graph_enabled: bool) -> None:
    """Refuse a reaction to a NaN loss that the mode cannot do, naming the ones that work.

    ``"skip"`` drops the update from Python, which a compiled graph (whose update is part of
    the graph) does not allow.
    """
    if action not in NAN_ACTIONS:
        raise ValueError(f"train.nan_check.action must be one of {NAN_ACTIONS}, got {action!r}")
    if action == "skip" and graph_enabled:
        raise ValueError(
            "train.nan_check.action='skip' needs Eager mode: in Graph mode the optimizer update "
            "is compiled into the graph and a step cannot be skipped. Supported: graph.enabled=True "
            "with nan_check.action='stop', or graph.enabled=False with 'skip' or 'stop'"
        )


def collective_fusion_applies(graph_enabled: bool, device_type: str) -> bool:
    """Whether ``train.nccl_fusion_threshold_mb`` / ``nccl_fusion_max_ops`` have an effect.

    They tune how a compiled graph batches its NCCL collectives (OneFlow's
    ``flow.boxing.nccl`` settings), so they apply to Graph mode on CUDA only: Eager mode
    launches each collective on its own, and the CPU has no NCCL.
    """
    return bool(graph_enabled) and device_type == "cuda"
