"""Random-number plumbing that OneFlow 0.9 leaves to the user: private dropout generators, and
the random streams a checkpoint must carry (:class:`RNGState`).

OneFlow 0.9's ``nn.Dropout`` gives every module its own ``flow.Generator()``, and each fresh
generator starts from the same fixed seed. So every dropout layer draws the *same* masks (correlated
across layers), ``flow.manual_seed``/``train.seed`` do not reach them, and their state cannot be
saved in a checkpoint (a resumed run would draw different masks). Routing them to the device's
default generator (``generator=None``) fixes all three: masks differ per layer, follow the seed,
and resume with :class:`RNGState`.
"""
import random
from typing import Any, Dict

import numpy as np
import oneflow as flow

__all__ = ["RNGState", "use_default_generators"]

# `flow.Generator` is a factory function in 0.9; the objects it returns share this type.
_GENERATOR_TYPE = type(flow.default_generator)


def use_default_generators(module: flow.nn.Module) -> int:
    """Make every submodule holding a private ``generator`` draw from the default one.

    Returns how many modules were changed. Call once after building the model, before training.
    """
    changed = 0
    for sub in module.modules():
        if isinstance(getattr(sub, "generator", None), _GENERATOR_TYPE):
            sub.generator = None
            changed += 1
    return changed


class RNGState:
    """The random streams of this process: Python ``random``, NumPy, and OneFlow (CPU and CUDA).

    Register it with the checkpointer (``Checkpointer(model, d, rng=RNGState())``) so that a
    resumed run draws the same numbers as the uninterrupted one. It is *per rank*: ranks are
    often seeded differently, so each rank's state is saved and restored to the same rank
    (a run with another number of processes keeps its own seeding, with a warning).

    Python and NumPy states are captured exactly. OneFlow's are not capturable in 0.9: the CPU
    generator's ``get_rng_state()`` omits the Mersenne Twister's position, so restoring it after
    any draw continues a *different* stream (seen here), and 0.9 has no CUDA ``get_rng_state``.
    So ``state_dict()`` draws a seed from OneFlow's own stream, re-seeds OneFlow with it
    (``flow.manual_seed`` covers CPU and CUDA) and records it; ``load_state_dict`` seeds with it
    again. Saving therefore moves OneFlow's stream to a new, recorded point, from which the
    running and the resumed run continue identically.
    """

    checkpoint_per_rank = True

    def state_dict(self) -> Dict[str, Any]:
        seed = int(flow.randint(0, 2 ** 63 - 1, (1,), dtype=flow.int64).numpy()[0])
        flow.manual_seed(seed)
        return {"python": random.getstate(), "numpy": np.random.get_state(), "oneflow_seed": seed}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        random.setstate(state["python"])
        np.random.set_state(state["numpy"])
        flow.manual_seed(int(state["oneflow_seed"]))
