"""The built-in registry table cannot rot: every declared path imports the class it names, and
every public class of each kind (read from the packages' ``__all__``) is declared."""
import importlib
import inspect

import pytest

import oneflow as flow
from libai.config.registry import all_registries
from libai.config.registry_builtins import BUILTIN_DECLARATIONS
from libai.config.targets import locate


def _public_classes(package, base, exclude=()):
    module = importlib.import_module(package)
    return {
        name: getattr(module, name) for name in module.__all__
        if inspect.isclass(getattr(module, name)) and issubclass(getattr(module, name), base)
        and name not in exclude
    }


def _kinds():
    """registry name -> {public name: class} that must be declared. Abstract bases are left
    out: a config cannot build them."""
    from libai.data.augmentation import AugmentationPipeline, Transform
    from libai.engine.trainer import HookBase, TrainerBase
    from libai.evaluation import DatasetEvaluator

    transforms = _public_classes("libai.data.augmentation", Transform,
                                 exclude=("Transform", "FunctionTransform"))
    transforms.update(_public_classes("libai.data.augmentation", AugmentationPipeline))
    losses = _public_classes("libai.layers.weighted_loss", flow.nn.Module, exclude=("WeightedLoss",))
    losses.update(_public_classes("libai.layers.loss_compose", flow.nn.Module))
    losses.update(_public_classes("libai.models.common.losses", flow.nn.Module))
    losses.update({"ParallelCrossEntropyLoss": importlib.import_module("libai.layers").ParallelCrossEntropyLoss})
    return {
        "MODEL": _public_classes("libai.models", flow.nn.Module),
        "DATASET": _public_classes("libai.data.datasets", object),
        "TRANSFORM": transforms,
        "LOSS": losses,
        "EVALUATOR": _public_classes("libai.evaluation", DatasetEvaluator, exclude=("DatasetEvaluator",)),
        "SCHEDULER": _public_classes("libai.scheduler", object),
        "OPTIMIZER": {n: c for n, c in vars(flow.optim).items()
                      if inspect.isclass(c) and issubclass(c, flow.optim.Optimizer)
                      and c is not flow.optim.Optimizer},
        "HOOK": _public_classes("libai.engine.hooks", HookBase, exclude=("HookBase",)),
        "TRAINER": _public_classes("libai.engine", TrainerBase, exclude=("TrainerBase",)),
    }


def test_every_registry_has_a_table():
    assert set(BUILTIN_DECLARATIONS) == set(all_registries())


@pytest.mark.parametrize("registry", sorted(BUILTIN_DECLARATIONS))
def test_every_declared_path_resolves_to_the_registry_entry(registry):
    table = BUILTIN_DECLARATIONS[registry]
    for name, path in table.items():
        obj = locate(path)
        assert inspect.isclass(obj), (name, path)
        assert all_registries()[registry].get(name) is obj, (name, path)


@pytest.mark.parametrize("registry", sorted(BUILTIN_DECLARATIONS))
def test_every_public_class_of_the_kind_is_declared(registry):
    table = BUILTIN_DECLARATIONS[registry]
    expected = _kinds()[registry]
    assert expected, registry  # the enumeration itself found classes
    missing = sorted(n for n in expected if n not in table)
    assert not missing, f"declare these in libai/config/registry_builtins.py ({registry}): {missing}"
    for name, cls in expected.items():
        assert locate(table[name]) is cls, (registry, name)


def test_classes_that_register_themselves_are_declared_too():
    """Self-registered built-ins (the augmentation transforms) must also be declared, or a
    config naming them would work only after something imported their package."""
    _kinds()  # imports every package
    for registry in all_registries().values():
        undeclared = [n for n in registry._objects if n not in BUILTIN_DECLARATIONS[registry.name]
                      and registry._objects[n].__module__.startswith("libai.")]
        assert not undeclared, (registry.name, undeclared)
