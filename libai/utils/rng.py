"""Random-number plumbing that OneFlow 0.9 leaves to the user.

OneFlow 0.9's ``nn.Dropout`` gives every module its own ``flow.Generator()``, and each fresh
generator starts from the same fixed seed. So every dropout layer draws the *same* masks (correlated
across layers), ``flow.manual_seed``/``train.seed`` do not reach them, and their state cannot be
saved in a checkpoint (a resumed run would draw different masks). Routing them to the device's
default generator (``generator=None``) fixes all three: masks differ per layer, follow the seed,
and resume with :class:`libai.utils.checkpoint.RNGState`.
"""
import oneflow as flow

__all__ = ["use_default_generators"]

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
