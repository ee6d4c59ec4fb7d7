"""Device figures the time and memory plans are computed from, and the parsing of sizes.

A plan never measures the machine it runs on: it is made for the devices of the run. The
presets below are vendors' published peak figures (dense, no sparsity) for common GPUs; any of
them can be overridden on the command line (``--device-flops 312T --link-bandwidth 300GB/s``).

``flops`` is the peak of the precision the run computes in (fp16/bf16 tensor cores with AMP,
fp32 without); ``efficiency`` is the fraction of that peak large matrix multiplies reach in
practice (0.6 by default: Megatron-LM reports 52% of the A100's peak for a whole GPT-3 step,
so the matrix multiplies alone run faster). ``intra_node_bandwidth`` is one direction of one
device's link to its node peers (NVLink, PCIe), ``inter_node_bandwidth`` its share of the
network between nodes.
"""
import re
from dataclasses import dataclass, replace
from typing import Dict, Optional

__all__ = ["Device", "DEVICE_PRESETS", "device_preset", "parse_bytes", "parse_rate", "format_bytes"]

GiB = 1024 ** 3


@dataclass(frozen=True)
class Device:
    """What one device offers a run (see the module docstring for each figure's meaning)."""

    name: str
    memory: float  # bytes
    flops_fp32: float  # peak FLOP/s in fp32
    flops_half: float  # peak FLOP/s in fp16/bf16 (what AMP uses)
    intra_node_bandwidth: float  # bytes/s, one direction, device <-> peer in the node
    inter_node_bandwidth: float  # bytes/s, one direction, per device across nodes
    efficiency: float = 0.6  # fraction of the peak that large matmuls reach

    def flops(self, amp: bool) -> float:
        """Peak FLOP/s for the precision a run computes in."""
        return self.flops_half if amp else self.flops_fp32

    def with_overrides(self, memory: Optional[float] = None, flops: Optional[float] = None,
                       link_bandwidth: Optional[float] = None,
                       inter_node_bandwidth: Optional[float] = None) -> "Device":
        """A copy with the given figures replaced (``flops`` replaces both precisions)."""
        out = self
        if memory is not None:
            out = replace(out, memory=float(memory))
        if flops is not None:
            out = replace(out, flops_fp32=float(flops), flops_half=float(flops))
        if link_bandwidth is not None:
            out = replace(out, intra_node_bandwidth=float(link_bandwidth))
        if inter_node_bandwidth is not None:
            out = replace(out, inter_node_bandwidth=float(inter_node_bandwidth))
        return out


T = 1e12
GB = 1e9
# Published peak figures (dense). Links: NVLink totals halved to one direction; network:
# one HDR (200 Gb/s) or NDR (400 Gb/s) InfiniBand port per GPU, as in DGX systems.
DEVICE_PRESETS: Dict[str, Device] = {
    "v100": Device("V100-SXM2-32GB", 32 * GiB, 15.7 * T, 125 * T, 150 * GB, 12.5 * GB),
    "a10": Device("A10-24GB", 24 * GiB, 31.2 * T, 125 * T, 25 * GB, 12.5 * GB),
    "a100-40gb": Device("A100-SXM4-40GB", 40 * GiB, 19.5 * T, 312 * T, 300 * GB, 25 * GB),
    "a100": Device("A100-SXM4-80GB", 80 * GiB, 19.5 * T, 312 * T, 300 * GB, 25 * GB),
    "h100": Device("H100-SXM5-80GB", 80 * GiB, 67 * T, 989 * T, 450 * GB, 50 * GB),
    # the 2-core, 24 GiB CPU machines CI runs on (OneFlow's OpenBLAS reached ~80 GFLOP/s per
    # core in fp32 there; processes talk through shared memory); the CPU has no fp16 speed-up
    "cpu": Device("CPU", 24 * GiB, 80e9, 80e9, 5 * GB, 1 * GB),
}
DEFAULT_DEVICE = "a100"


def device_preset(name: str) -> Device:
    """The preset called ``name`` (case-insensitive); a clear error listing them otherwise."""
    key = name.lower()
    if key not in DEVICE_PRESETS:
        raise ValueError(f"unknown device {name!r}; choose one of {sorted(DEVICE_PRESETS)} or give "
                         "--device-memory/--device-flops/--link-bandwidth yourself")
    return DEVICE_PRESETS[key]


_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15,
          "ki": 2 ** 10, "mi": 2 ** 20, "gi": 2 ** 30, "ti": 2 ** 40, "pi": 2 ** 50}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgtp]i?)?\s*(.*)$", re.I)


def _parse(text: str, suffixes: tuple, what: str, example: str) -> float:
    match = _NUMBER.match(str(text))
    rest = match.group(3).strip().lower() if match else None
    if not match or rest not in suffixes:
        raise ValueError(f"cannot read {text!r} as {what}; write it like {example}")
    return float(match.group(1)) * _UNITS[(match.group(2) or "").lower()]


def parse_bytes(text: "str | float") -> float:
    """``"80GiB"``, ``"80G"``, ``"24gib"``, ``"1.5TB"`` or a plain number of bytes."""
    if isinstance(text, (int, float)):
        return float(text)
    return _parse(text, ("", "b", "bytes"), "a memory size", "80GiB, 40GB or 24e9")


def parse_rate(text: "str | float", unit: str) -> float:
    """A per-second figure: ``"312T"``, ``"312TFLOPS"``, ``"300GB/s"``, ``"1.5e14"``."""
    if isinstance(text, (int, float)):
        return float(text)
    suffixes = {"flops": ("", "flops", "flop/s"), "bytes": ("", "b/s", "bytes/s", "bps")}[unit]
    example = {"flops": "312T or 312TFLOPS", "bytes": "300GB/s or 25e9"}[unit]
    return _parse(text, suffixes, f"a rate in {unit}/s", example)


def format_bytes(n: float) -> str:
    """``1536.0 -> '1.50 KiB'``: binary units, three significant figures."""
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"
