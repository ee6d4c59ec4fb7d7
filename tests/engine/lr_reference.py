"""The learning rate a default run must use at each iteration, computed here from the formula
(not with libai's scheduler): linear warmup from ``warmup_factor × base`` to where the cosine
stands at ``warmup_iter``, then ``base × (α + (1 − α) ½(1 + cos(π t / max_iter)))`` (the default
``train.scheduler`` of configs/common/train.py: ``WarmupCosineLR``, ``α = 0.01``). Tests compare the logged ``lr`` with it, which catches a
scheduler that is built but never stepped (the logged rate would stay constant)."""
import math
from typing import List


def warmup_cosine_lrs(base: float, max_iter: int, warmup_iter: int, warmup_factor: float = 0.001,
                      alpha: float = 0.01) -> List[float]:
    """The rate of every iteration ``0 .. max_iter - 1``."""
    def cosine(t: int) -> float:
        return base * (alpha + (1.0 - alpha) * 0.5 * (1.0 + math.cos(math.pi * t / max_iter)))

    rates = []
    for t in range(max_iter):
        if t < warmup_iter:
            start = warmup_factor * base
            rates.append(start + (cosine(warmup_iter) - start) * t / warmup_iter)
        else:
            rates.append(cosine(t))
    return rates
