"""The table of model families: who registers, and how a family is found.

Each module of :mod:`libai.models.pretrained.families` decorates its
:class:`~libai.models.pretrained.mapping.FamilyMapping` subclass with :func:`register`;
:func:`mapping_for_class` and :func:`mapping_for_config` read the table. This module imports
neither the families nor :mod:`~libai.models.pretrained.mapping`, so registering creates no
import circle: the package (``libai/models/pretrained/__init__.py``, through
:mod:`~libai.models.pretrained.api`) imports the families once, which fills the table before any
lookup.
"""
from typing import Any, Dict, Mapping, Optional, TypeVar

__all__ = [
    "register", "mapping_for_class", "mapping_for_config", "registered_types", "auto_class_name",
]

# The values are FamilyMapping instances; typed loosely so that this module imports nothing.
_BY_TYPE: Dict[str, Any] = {}
_BY_CLASS: Dict[str, Any] = {}

FamilyClass = TypeVar("FamilyClass", bound=type)


def register(cls: FamilyClass) -> FamilyClass:
    """Class decorator: make a family findable by model type and by libai class name.

    ``cls`` declares ``model_types`` (``config.json``'s ``model_type`` values) and ``targets``
    (the libai classes it builds); one instance serves every lookup. A class name already
    claimed keeps its first family (RoBERTa's classes derive from BERT's, not the reverse).
    """
    instance = cls()
    for model_type in cls.model_types:
        _BY_TYPE[model_type] = instance
    for name in cls.targets:
        _BY_CLASS.setdefault(name, instance)
    return cls


def registered_types() -> list:
    """The ``model_type`` values libai can import, sorted (for messages)."""
    return sorted(_BY_TYPE)


def _unknown_type(model_type: Any) -> ValueError:
    return ValueError(
        f"config.json has model_type={model_type!r}, which libai cannot import; "
        f"supported: {registered_types()}"
    )


def mapping_for_class(name: str, model_type: Optional[str] = None) -> Any:
    """The family that builds the libai class ``name`` (from ``model_type`` when given)."""
    if model_type is not None:
        family = _BY_TYPE.get(model_type)
        if family is None:
            raise _unknown_type(model_type)
        if name not in family.targets:
            raise ValueError(
                f"a {model_type!r} checkpoint cannot be loaded into {name}; it loads into "
                f"{sorted(family.targets)}"
            )
        return family
    if name not in _BY_CLASS:
        raise ValueError(
            f"{name} has no Hugging Face weight mapping; classes with one: {sorted(_BY_CLASS)}"
        )
    return _BY_CLASS[name]


def mapping_for_config(cfg: Mapping[str, Any]) -> Any:
    """The family of a ``config.json``."""
    model_type = cfg.get("model_type")
    if model_type not in _BY_TYPE:
        raise _unknown_type(model_type)
    return _BY_TYPE[model_type]


def auto_class_name(cfg: Mapping[str, Any], role: str) -> str:
    """The libai class name that serves the Auto class ``role`` (``"model"``, ``"causal_lm"``,
    ``"seq2seq_lm"``) for a ``config.json``; a family without one names the families with one."""
    family = mapping_for_config(cfg)
    name = family.auto_classes.get(role)
    if name is None:
        serving = sorted(t for t, f in _BY_TYPE.items() if role in f.auto_classes)
        raise ValueError(
            f"model_type={cfg.get('model_type')!r} has no libai class for {role!r}; its classes "
            f"are {sorted(family.targets)}. model types with one: {serving}"
        )
    return name
