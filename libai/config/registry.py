"""Registries: build objects by a registered *name* instead of an import path.

Users of registry-based frameworks (fvcore / detectron2 / mmcv style) write
``@MODEL_REGISTRY.register()`` above a class and name it in a config as
``dict(name="MyModel", ...)``. A :class:`Registry` is a name -> object table with a
decorator to fill it and a lookup that answers an unknown name with the closest known ones.

libai's own classes are *declared* in the built-in registries by dotted path
(:meth:`Registry.declare`, the table is :mod:`libai.config.registry_builtins`), not imported:
``libai.config`` sits below every other package (see ``.importlinter``), and declaring by path
keeps ``import libai.config`` from loading the models. A declared entry is imported the first
time it is looked up.

Every live registry, the built-in ones and any a user creates, takes part in building
``dict(name=...)`` config nodes (:mod:`libai.config.name_nodes` has the rule;
docs/registry_configs.md explains it for users).
"""
import difflib
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, TypeVar, Union

from libai.config.registry_builtins import BUILTIN_DECLARATIONS
from libai.config.targets import locate

__all__ = [
    "Registry",
    "RegistryError",
    "DATASET_REGISTRY",
    "EVALUATOR_REGISTRY",
    "HOOK_REGISTRY",
    "LOSS_REGISTRY",
    "MODEL_REGISTRY",
    "OPTIMIZER_REGISTRY",
    "SCHEDULER_REGISTRY",
    "TRAINER_REGISTRY",
    "TRANSFORM_REGISTRY",
    "all_registries",
    "find_registry",
    "registries_with",
    "live_registries",
]

T = TypeVar("T")


class RegistryError(KeyError):
    """A name is unknown to a registry, or registered twice."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0]) if self.args else ""


class Registry:
    """A named table of objects that configs refer to by name.

    >>> BACKBONES = Registry("BACKBONE")
    >>> @BACKBONES.register()
    ... class TinyNet: ...
    >>> BACKBONES.get("TinyNet") is TinyNet
    True

    ``register`` is a decorator (``@R.register()`` or ``@R.register("OtherName")``) or a call
    (``R.register(obj)``, ``R.register(obj, name="OtherName")``). Registering a second, different
    object under a taken name is an error (a silent replacement would make a config mean two
    things); registering the same object again is allowed, so re-imported modules are harmless.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a registry needs a non-empty string name, got {name!r}")
        self._name = name
        self._objects: Dict[str, Any] = {}
        self._declared: Dict[str, str] = {}
        # every live registry takes part in resolving dict(name=...) config nodes
        _LIVE_REGISTRIES.append(weakref.ref(self))

    @property
    def name(self) -> str:
        return self._name

    # ------------------------------------------------------------------------- filling
    def register(
        self, obj: Any = None, name: Optional[str] = None
    ) -> Union[Any, Callable[[T], T]]:
        """Register ``obj`` (returned unchanged), or return a decorator that does.

        A string as the first argument is taken as the name: ``@R.register("Alias")``.
        """
        if isinstance(obj, str) and name is None:
            obj, name = None, obj
        if obj is None:

            def decorator(target: T) -> T:
                self._add(name or _name_of(target), target)
                return target

            return decorator
        self._add(name or _name_of(obj), obj)
        return obj

    def declare(self, name: str, dotted_path: str) -> None:
        """Make ``name`` resolve to the object at ``dotted_path``, imported on first lookup."""
        if name in self._objects and _path_of(self._objects[name]) != dotted_path:
            raise RegistryError(
                f"{self._name} registry: {name!r} is already registered as "
                f"{_path_of(self._objects[name])}; pick another name"
            )
        self._declared[name] = dotted_path

    def _add(self, name: str, obj: Any) -> None:
        taken = self._objects.get(name)
        if taken is not None and taken is not obj:
            raise RegistryError(
                f"{self._name} registry: {name!r} is already registered as {_path_of(taken)}; "
                f"register {_path_of(obj)} under another name: register(name='...')"
            )
        declared = self._declared.get(name)
        if declared is not None and declared != _path_of(obj):
            raise RegistryError(
                f"{self._name} registry: {name!r} is a built-in name ({declared}); "
                f"register {_path_of(obj)} under another name: register(name='...')"
            )
        self._objects[name] = obj

    def unregister(self, name: str) -> None:
        """Forget ``name`` (tests and interactive sessions that redefine a class)."""
        self._objects.pop(name, None)
        self._declared.pop(name, None)

    # ------------------------------------------------------------------------- lookup
    def get(self, name: str) -> Any:
        """The object registered as ``name``; an unknown name raises :class:`RegistryError`
        listing the closest registered names."""
        if name in self._objects:
            return self._objects[name]
        if name in self._declared:
            obj = locate(self._declared[name])
            self._objects[name] = obj
            return obj
        raise RegistryError(self._unknown_message(name))

    def _unknown_message(self, name: Any) -> str:
        known = self.names()
        close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
        listing = ", ".join(known) if len(known) <= 30 else ", ".join(known[:30]) + ", ..."
        return (
            f"no {name!r} in the {self._name} registry; {hint}registered names: {listing}. "
            f"A class of your own needs @<{self._name} registry>.register() in a module the "
            f"config imports (a YAML config lists it under custom_imports)."
        )

    def names(self) -> List[str]:
        """All names, registered and declared, sorted."""
        return sorted(set(self._objects) | set(self._declared))

    def __contains__(self, name: object) -> bool:
        return name in self._objects or name in self._declared

    def __iter__(self) -> Iterator[Tuple[str, Any]]:
        """``(name, object)`` pairs; declared entries are imported."""
        for name in self.names():
            yield name, self.get(name)

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry(name={self._name!r}, names={self.names()})"


_LIVE_REGISTRIES: List["weakref.ReferenceType[Registry]"] = []


def live_registries() -> List[Registry]:
    """Every registry still referenced (built-in and user-made), oldest first."""
    alive = [(ref, ref()) for ref in _LIVE_REGISTRIES]
    _LIVE_REGISTRIES[:] = [ref for ref, reg in alive if reg is not None]
    return [reg for _, reg in alive if reg is not None]


def _name_of(obj: Any) -> str:
    name = getattr(obj, "__name__", None)
    if not name:
        raise RegistryError(f"cannot tell the name of {obj!r}; pass register(obj, name='...')")
    return name


def _path_of(obj: Any) -> str:
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(obj)


MODEL_REGISTRY = Registry("MODEL")
DATASET_REGISTRY = Registry("DATASET")
TRANSFORM_REGISTRY = Registry("TRANSFORM")
LOSS_REGISTRY = Registry("LOSS")
EVALUATOR_REGISTRY = Registry("EVALUATOR")
SCHEDULER_REGISTRY = Registry("SCHEDULER")
OPTIMIZER_REGISTRY = Registry("OPTIMIZER")
HOOK_REGISTRY = Registry("HOOK")
TRAINER_REGISTRY = Registry("TRAINER")


_BUILTIN: Tuple[Registry, ...] = (
    MODEL_REGISTRY, DATASET_REGISTRY, TRANSFORM_REGISTRY, LOSS_REGISTRY,
    EVALUATOR_REGISTRY, SCHEDULER_REGISTRY, OPTIMIZER_REGISTRY, HOOK_REGISTRY,
    TRAINER_REGISTRY,
)

for _registry in _BUILTIN:
    for _entry, _path in BUILTIN_DECLARATIONS[_registry.name].items():
        _registry.declare(_entry, _path)


def all_registries() -> Dict[str, Registry]:
    """The built-in registries by name (``"MODEL"``, ``"DATASET"``, ...)."""
    return {r.name: r for r in _BUILTIN}


def find_registry(name: str) -> Registry:
    """The registry called ``name``; ``"MODEL"``, ``"model"`` and ``"MODEL_REGISTRY"`` all
    name the model registry. Built-in registries come first; among user registries of the
    same name, the newest wins.

    Raises:
        RegistryError: no registry has that name (the message lists the known ones).
    """
    wanted = str(name).upper()
    if wanted.endswith("_REGISTRY"):
        wanted = wanted[: -len("_REGISTRY")]
    for registry in _BUILTIN:
        if registry.name.upper() == wanted:
            return registry
    for registry in reversed(live_registries()):
        if registry.name.upper() == wanted:
            return registry
    known = sorted({r.name for r in live_registries()})
    close = difflib.get_close_matches(wanted, known, n=2, cutoff=0.5)
    hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
    raise RegistryError(f"no registry called {name!r}; {hint}registries: {', '.join(known)}")


def registries_with(name: str) -> List[Registry]:
    """Every live registry (built-in or user-made) that knows ``name``, built-ins first."""
    found = [r for r in _BUILTIN if name in r]
    seen = {id(r) for r in found}
    found += [r for r in live_registries() if id(r) not in seen and name in r]
    return found
