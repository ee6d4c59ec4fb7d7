"""Preflight: validate a run and plan its placement, memory and time before launching it.

``libai.plan(cfg, world_size=1024, device_memory="80GiB")`` returns a :class:`Plan`;
``python tools/train_net.py --config-file CFG --dry-run`` prints the same plan (see
docs/preflight.md). Modules, one job each: ``shapes`` (the model built without weights),
``config_checks``/``layout_checks``/``data_checks`` (validation), ``trace`` (the shape pass: one
sample through the model for convolutions and a user's own modules), ``module_costs`` (what one
call of a module computes and keeps), ``costs`` (per-layer arithmetic), ``memory``, ``timing``,
``placement``, ``advice``, ``search`` (``--suggest``), ``hardware`` (device figures), ``report``
(text), ``cli`` (the ``--dry-run`` entry point).
"""
from libai.plan.core import Plan, plan
from libai.plan.hardware import DEVICE_PRESETS, Device
from libai.plan.problems import PlanProblems, Problem
from libai.plan.search import Candidate, suggest

__all__ = ["Plan", "plan", "PlanProblems", "Problem", "Device", "DEVICE_PRESETS", "Candidate", "suggest"]


def _make_callable() -> None:
    """``libai.plan`` is this package, and calling it is :func:`plan`: ``libai.plan(cfg)``."""
    import sys
    import types

    class _CallablePackage(types.ModuleType):
        def __call__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            return plan(*args, **kwargs)

    sys.modules[__name__].__class__ = _CallablePackage


_make_callable()
