"""The knobs of one planned run: layout, batch, precision, checkpointing, ZeRO, optimizer."""
from dataclasses import dataclass, replace
from typing import Any, Tuple

__all__ = ["RunShape", "optimizer_slots"]


@dataclass(frozen=True)
class RunShape:
    """Everything the memory and time plans depend on besides the model and the device."""

    dp: int
    tp: int
    pp: int
    micro_batch: int
    accumulation: int
    seq: int  # tokens per sample (attention length)
    stage_of_layer: Tuple[int, ...]  # stage of every layer index
    amp: bool = False
    checkpointing: bool = False
    zero_stage: int = 0  # 0 = off
    optimizer_slots: int = 2  # state tensors per parameter (AdamW: 2)
    graph: bool = True  # Graph mode pipelines micro-batches (1F1B); Eager runs one at a time
    devices_per_node: int = 8
    fusion_buffer_bytes: float = 16 * 2 ** 20  # grad all-reduce fusion buffer (nccl_fusion_threshold_mb)

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp

    @property
    def global_batch(self) -> int:
        return self.micro_batch * self.accumulation * self.dp

    @property
    def elem(self) -> int:
        """Bytes per activation element: 2 under AMP (fp16/bf16), else 4."""
        return 2 if self.amp else 4

    def layers_of_stage(self, stage: int) -> Tuple[int, ...]:
        return tuple(i for i, s in enumerate(self.stage_of_layer) if s == stage)

    def in_flight(self, stage: int) -> int:
        """Micro-batches whose activations a stage holds at once: 1F1B keeps ``pp - stage`` (at
        most the number of micro-batches); Eager finishes each micro-batch before the next."""
        if self.pp == 1 or not self.graph:
            return 1
        return max(1, min(self.accumulation, self.pp - stage))

    def describe(self) -> str:
        zero = f", ZeRO-{self.zero_stage}" if self.zero_stage else ""
        ckpt = ", act. ckpt" if self.checkpointing else ""
        return (f"DP{self.dp}×TP{self.tp}×PP{self.pp}, micro {self.micro_batch} × {self.accumulation} "
                f"acc{ckpt}{zero}")

    def with_(self, **changes: Any) -> "RunShape":
        return replace(self, **changes)


_SLOTS = {"adamw": 2, "adam": 2, "lamb": 2, "adagrad": 1, "rmsprop": 1}


def optimizer_slots(optim_cfg: Any) -> int:
    """State tensors per parameter of the configured optimizer (AdamW and Adam keep two; SGD one
    with momentum, none without)."""
    target = optim_cfg.get("_target_", "") if hasattr(optim_cfg, "get") else ""
    name = (target if isinstance(target, str) else getattr(target, "__name__", "")).rsplit(".", 1)[-1].lower()
    if name == "sgd":
        return 1 if float(optim_cfg.get("momentum", 0.0) or 0.0) else 0
    if name == "rmsprop":
        return 1 + bool(optim_cfg.get("centered", False)) + bool(optim_cfg.get("momentum", 0.0))
    if name in ("adam", "adamw") and optim_cfg.get("amsgrad", False):
        return 3
    return _SLOTS.get(name, 2)
