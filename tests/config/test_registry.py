"""Registry: filling by decorator or call, lazy declared entries, and the errors' exact words."""
import pytest

from libai.config.registry import (
    MODEL_REGISTRY,
    Registry,
    RegistryError,
    all_registries,
    find_registry,
    registries_with,
)


def test_register_as_decorator_call_and_alias():
    reg = Registry("WIDGET")

    @reg.register()
    class Plain:
        pass

    @reg.register("Aliased")
    class Other:
        pass

    def factory():
        return 3

    assert reg.register(factory) is factory
    reg.register(factory, name="make_three")
    assert reg.get("Plain") is Plain
    assert reg.get("Aliased") is Other
    assert reg.get("factory") is factory and reg.get("make_three") is factory
    assert reg.names() == ["Aliased", "Plain", "factory", "make_three"]
    assert "Plain" in reg and "Other" not in reg
    assert len(reg) == 4
    assert dict(iter(reg))["Plain"] is Plain


def test_same_object_twice_is_fine_a_different_one_is_an_error():
    reg = Registry("WIDGET")

    class A:
        pass

    reg.register(A)
    reg.register(A)  # a re-imported module registers the same class again
    B = type("A", (), {})
    with pytest.raises(RegistryError) as info:
        reg.register(B)
    assert "WIDGET registry: 'A' is already registered as" in str(info.value)
    assert "register(name='...')" in str(info.value)


def test_unknown_name_suggests_the_closest_names():
    reg = Registry("WIDGET")
    for name in ("ResNet", "ResMLP", "AlexNet"):
        reg.register(type(name, (), {}))
    with pytest.raises(RegistryError) as info:
        reg.get("ResNte")
    assert str(info.value) == (
        "no 'ResNte' in the WIDGET registry; did you mean 'ResNet', 'ResMLP'? registered names: "
        "AlexNet, ResMLP, ResNet. A class of your own needs @<WIDGET registry>.register() in a "
        "module the config imports (a YAML config lists it under custom_imports)."
    )


def test_declared_entries_import_on_first_lookup():
    reg = Registry("WIDGET")
    reg.declare("OrderedDictEntry", "collections.OrderedDict")
    assert "OrderedDictEntry" in reg
    import collections

    assert reg.get("OrderedDictEntry") is collections.OrderedDict


def test_a_builtin_name_cannot_be_taken_by_another_class():
    class ResNet:  # a user's class named like libai's
        pass

    with pytest.raises(RegistryError) as info:
        MODEL_REGISTRY.register(ResNet)
    assert "'ResNet' is a built-in name (libai.models.resnet.ResNet)" in str(info.value)
    MODEL_REGISTRY.register(ResNet, name="MyResNet")
    try:
        assert MODEL_REGISTRY.get("MyResNet") is ResNet
    finally:
        MODEL_REGISTRY.unregister("MyResNet")
    assert "MyResNet" not in MODEL_REGISTRY


def test_find_registry_accepts_the_usual_spellings():
    assert find_registry("MODEL") is MODEL_REGISTRY
    assert find_registry("model") is MODEL_REGISTRY
    assert find_registry("MODEL_REGISTRY") is MODEL_REGISTRY
    assert set(all_registries()) == {
        "MODEL", "DATASET", "TRANSFORM", "LOSS", "EVALUATOR", "SCHEDULER", "OPTIMIZER", "HOOK",
        "TRAINER",
    }
    user = Registry("BACKBONE")
    assert find_registry("backbone") is user
    with pytest.raises(RegistryError) as info:
        find_registry("MODLE")
    assert str(info.value).startswith("no registry called 'MODLE'; did you mean 'MODEL'?")


def test_registries_with_lists_every_registry_knowing_a_name():
    user = Registry("BACKBONE")
    user.register(type("SwinTransformerV2", (), {}))
    try:
        assert registries_with("SwinTransformerV2") == [MODEL_REGISTRY, user]
    finally:
        user.unregister("SwinTransformerV2")
    assert registries_with("NoSuchThing") == []
