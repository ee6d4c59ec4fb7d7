"""Build objects from config nodes: ``instantiate(cfg.model)``.

A node is a mapping with a ``_target_`` (a class, a function or a dotted import string) and
keyword arguments. Building is recursive and children come first, so a node's arguments are
already-built objects when its target is called. Everything else passes through with the
nodes inside it built: lists stay lists (tuples, named tuples included, keep their type), and
a mapping without ``_target_`` reaches a target as an omegaconf ``DictConfig`` holding the
built values, as LiBai hands it over, so code written against LiBai (``cfg.hidden_size``,
``cfg.get(...)``, ``OmegaConf.to_container(cfg)``) works unchanged; modules, tensors and
other objects inside it stay the same objects. (A top-level ``instantiate(mapping)`` returns
a plain ``dict``; a mapping omegaconf cannot hold unchanged, e.g. one holding a named tuple,
is handed over as a ``dict``.)

Two keys of a node are not arguments. ``_target_`` may itself be a node, built first to obtain
the callable (a factory that returns a class or a function). ``_recursive_: False`` (in the node,
or ``instantiate(node, _recursive_=False)``) hands the node's arguments to the target as they are,
nested nodes unbuilt, for a target that builds them itself.

A mapping without ``_target_`` whose ``name`` is a string may be a *registry node*,
``dict(name="MyModel", **params)``: it is built by calling the registered ``MyModel`` with
``params``, exactly like ``LazyCall(MyModel)(**params)``. Whether a named mapping is such a node,
and which registry it is looked up in, depends on where it stands (``model`` resolves in
``MODEL_REGISTRY``, ``dataloader.train.dataset`` in ``DATASET_REGISTRY``, ...): see
:mod:`libai.config.name_nodes` for the rule. A registry node of a model has two keys that are
not arguments: ``ema`` (a training setting, moved to ``train.ema`` by
:func:`libai.config.lift_model_ema`) and a ``loss`` dict of weighted losses, which the model
receives as a built ``LossKeyCompose`` (docs/registry_configs.md).

Errors say *where*: a failure anywhere names the key path of the failing node (counted from the
config root when the node came from one, e.g. ``dataloader.train.dataset[0]``) and its target,
and chains the original exception.
"""
import dataclasses
import difflib
import inspect
from collections.abc import Mapping
from typing import Any, Dict, List

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from libai.config.errors import InstantiationError
from libai.config.name_nodes import REGISTRY_KEY, is_name_node, resolve_name_node
from libai.config.paths import join_path
from libai.config.registry import LOSS_REGISTRY, Registry
from libai.config.targets import describe_target, locate

__all__ = ["instantiate", "instantiate_with", "is_node"]

TARGET_KEY = "_target_"
RECURSIVE_KEY = "_recursive_"
_SPECIAL_KEYS = (TARGET_KEY, RECURSIVE_KEY)
_NAME_NODE_SPECIAL_KEYS = ("name", REGISTRY_KEY, RECURSIVE_KEY)
# keys of a MODEL registry node that are not model arguments
_MODEL_EMA_KEY = "ema"
_MODEL_LOSS_KEY = "loss"
# mappings handed to targets hold built objects as they are
_VIEW_FLAGS = {"allow_objects": True}


def is_node(obj: Any) -> bool:
    """True for a config node: a mapping holding a ``_target_``, or a ``dict(name=...)``
    registry node whose name a registry knows (or whose ``_registry_`` names one)."""
    if not isinstance(obj, (Mapping, DictConfig)):
        return False
    return TARGET_KEY in obj or is_name_node(obj)


def _named(obj: Any) -> bool:
    """A mapping that may be a registry node, depending on where it stands."""
    return (isinstance(obj, (Mapping, DictConfig)) and TARGET_KEY not in obj
            and isinstance(obj.get("name"), str))


def instantiate(cfg: Any, **kwargs: Any) -> Any:
    """Build every node in ``cfg`` and return the result.

    Args:
        cfg: a node (``LazyCall(...)(...)`` or any mapping with ``_target_``), or a dict/list
            (DictConfig, ListConfig or plain) that may contain nodes, or any other value.
        kwargs: for a node, arguments that replace (or add to) the node's own for this call
            only, the config is left untouched (see :func:`instantiate_with`); and
            ``_recursive_=False`` to pass the node's arguments to its target unbuilt.

    Returns:
        The target's return value for a node; a plain ``dict``/``list`` (tuples stay tuples)
        with nodes built for containers; anything else unchanged.

    Raises:
        InstantiationError: a target could not be imported or raised; the message names the
            key path and the target, and ``__cause__`` is the original exception.
    """
    recursive = kwargs.pop(RECURSIVE_KEY, True)
    _check_recursive_flag(recursive, "instantiate(_recursive_=...)")
    if kwargs:
        if not (is_node(cfg) or _named(cfg)):
            raise TypeError(
                f"instantiate(cfg, **arguments) replaces arguments of a node; {type(cfg).__name__} "
                f"without a '{TARGET_KEY}' has none (got {sorted(kwargs)})"
            )
        path = _node_path(cfg)
        if TARGET_KEY not in cfg and resolve_name_node(cfg, path) is None:
            raise TypeError(
                f"instantiate(cfg, **arguments) replaces arguments of a node; {_where(path)} has "
                f"name={cfg.get('name')!r}, which no registry knows, so it is plain data. "
                f"Register the class, or set _registry_ to the registry that has it"
            )
        copy = {key: cfg[key] for key in cfg.keys()}
        # objects given here are handed to the target as they are (a list of param-group
        # dicts stays a list of dicts): they are values, not config to build
        copy.update({key: value if key == TARGET_KEY else _Given(value)
                     for key, value in kwargs.items()})
        return _build(copy, path, recursive)
    return _build(cfg, _node_path(cfg), recursive)


class _Given:
    """An argument passed to ``instantiate(node, **arguments)``: handed over unchanged."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, _Given) else value


def _check_recursive_flag(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{where} must be True or False, got {value!r}")


def _node_path(node: Any) -> str:
    """Where ``node`` sits in the config it came from (``""`` for a root or a detached node)."""
    if not isinstance(node, (DictConfig, ListConfig)):
        return ""
    keys: List[Any] = []
    try:
        parent = node._get_parent()
        while parent is not None:
            keys.append(node._key())
            node, parent = parent, parent._get_parent()
    except Exception:  # omegaconf internals changed: fall back to paths relative to the node
        return ""
    path = ""
    for key in reversed(keys):
        path = join_path(path, key)
    return path


def _where(path: str) -> str:
    return f"'{path}'" if path else "the config root"


def _child(node: Any, key: Any, path: str) -> Any:
    """``node[key]``, turning omegaconf's interpolation / missing-value errors into ours."""
    try:
        return node[key]
    except OmegaConfBaseException as error:
        raise InstantiationError(
            f"Cannot read {_where(join_path(path, key))}: {str(error).splitlines()[0]}. "
            f"Set the value in the config "
            f"or with an override '{join_path(path, key)}=...'",
            join_path(path, key),
        ) from error


def _build(node: Any, path: str, recursive: bool = True, as_config: bool = False) -> Any:
    """Build ``node``; ``as_config`` marks a value that will be handed to a target, whose
    mappings become attribute-accessible ``DictConfig`` objects (see :func:`_config_view`)."""
    if isinstance(node, _Given):
        return node.value
    if isinstance(node, (Mapping, DictConfig)):
        if TARGET_KEY in node:
            return _call(node, path, recursive)
        if _named(node):
            # a node of a loaded config knows its full path even when handed over detached
            resolved = resolve_name_node(node, _node_path(node) or path)
            if resolved is not None:
                return _call_named(node, path, resolved[0], resolved[1], recursive)
        built = {
            key: _build(_child(node, key, path), join_path(path, key), as_config=as_config)
            for key in node.keys()
            if key != REGISTRY_KEY
        }
        return _config_view(built) if as_config else built
    if isinstance(node, (list, tuple, ListConfig)):
        built = [_build(_child(node, i, path), join_path(path, i), as_config=as_config)
                 for i in range(len(node))]
        if isinstance(node, tuple) and hasattr(type(node), "_fields"):
            return type(node)(*built)  # a named tuple keeps its type
        return tuple(built) if isinstance(node, tuple) else built
    return node


def _keeps_type_only_in_dict(value: Any) -> bool:
    """A value omegaconf would convert on the way in (a named tuple, a dataclass or attrs
    instance become lists / structured configs), anywhere inside ``value``."""
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return True
    if hasattr(type(value), "__attrs_attrs__") and not isinstance(value, type):
        return True
    if isinstance(value, Mapping) and not isinstance(value, DictConfig):
        return any(_keeps_type_only_in_dict(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_keeps_type_only_in_dict(v) for v in value)
    return False


def _config_view(built: Dict[Any, Any]) -> Any:
    """A mapping handed to a target, as LiBai hands it: an omegaconf ``DictConfig`` (so
    ``cfg.hidden_size`` and ``cfg["hidden_size"]`` both work), holding the built children
    as they are (``allow_objects``: a module or a tensor stays the same object).

    A mapping that omegaconf cannot hold without changing a value (non-string keys it
    rejects, named tuples, dataclass instances) is handed over as the plain ``dict``.
    """
    if _keeps_type_only_in_dict(built):
        return built
    try:
        return OmegaConf.create(built, flags=_VIEW_FLAGS)
    except (OmegaConfBaseException, ValueError, TypeError):
        return built


def _resolve_target(spec: Any, path: str) -> Any:
    if is_node(spec):  # a lazy target: the node builds the callable
        spec = _build(spec, join_path(path, TARGET_KEY))
    if isinstance(spec, str):
        try:
            spec = locate(spec)
        except Exception as error:
            raise InstantiationError(
                f"Cannot import _target_ '{spec}' of {_where(path)}: {type(error).__name__}: "
                f"{error}. Check the spelling, and that the module is installed or importable "
                f"from the current directory.",
                path,
                str(spec),
            ) from error
    if not callable(spec):
        raise InstantiationError(
            f"_target_ of {_where(path)} is {spec!r}, which cannot be called; use a class, a "
            f"function, or a dotted string naming one",
            path,
            repr(spec),
        )
    return spec


def _target_name(spec: Any) -> str:
    if is_node(spec):
        return f"{_target_name(spec[TARGET_KEY])}(...)"
    return describe_target(spec)


def _call(node: Any, path: str, recursive: bool = True) -> Any:
    name = _target_name(_child(node, TARGET_KEY, path))
    if RECURSIVE_KEY in node:
        recursive = _child(node, RECURSIVE_KEY, path)
        _check_recursive_flag(recursive, f"{RECURSIVE_KEY} of {_where(path)}")
    kwargs = {
        key: _build(_child(node, key, path), join_path(path, key), as_config=True) if recursive
        else _unwrap(_child(node, key, path))
        for key in node.keys()
        if key not in _SPECIAL_KEYS
    }
    non_str = [key for key in kwargs if not isinstance(key, str)]
    if non_str:
        raise InstantiationError(
            f"Node {_where(path)} has non-string keys {non_str}; arguments are passed by keyword",
            path,
            name,
        )
    target = _resolve_target(_child(node, TARGET_KEY, path), path)
    return _invoke(target, kwargs, path, name)


def _call_named(node: Any, path: str, target: Any, registry: Registry, recursive: bool = True) -> Any:
    """Build a registry node: ``target(**arguments)``, arguments built like a LazyCall's."""
    name = f"{registry.name}:{node.get('name')}"
    if RECURSIVE_KEY in node:
        recursive = _child(node, RECURSIVE_KEY, path)
        _check_recursive_flag(recursive, f"{RECURSIVE_KEY} of {_where(path)}")
    is_model = registry.name == "MODEL"
    kwargs: Dict[str, Any] = {}
    for key in node.keys():
        if key in _NAME_NODE_SPECIAL_KEYS or (is_model and key == _MODEL_EMA_KEY):
            continue
        value = _child(node, key, path)
        if is_model and key == _MODEL_LOSS_KEY and _is_loss_dict(value):
            kwargs[key] = _build_loss_compose(value, join_path(path, key))
        elif recursive:
            kwargs[key] = _build(value, join_path(path, key), as_config=True)
        else:
            kwargs[key] = _unwrap(value)
    return _invoke(target, kwargs, path, name)


def _is_loss_dict(value: Any) -> bool:
    """``dict(loss1=[dict(name=...), ...], ...)``: named groups of loss entries (a single
    ``dict(name=...)`` loss node is not one; it is built as a node)."""
    if not isinstance(value, (Mapping, DictConfig)) or not len(value) or "name" in value \
            or TARGET_KEY in value:
        return False
    for group in value.values():
        entries = [group] if isinstance(group, (Mapping, DictConfig)) else group
        if not isinstance(entries, (list, tuple, ListConfig)) or not len(entries):
            return False
        if not all(isinstance(e, (Mapping, DictConfig)) and "name" in e for e in entries):
            return False
    return True


def _build_loss_compose(value: Any, path: str) -> Any:
    """The ``LossKeyCompose`` of a model's ``loss`` dict (looked up by name: libai.config may
    not import libai.layers)."""
    plain = OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig) else value
    return _invoke(LOSS_REGISTRY.get("LossKeyCompose"), {"loss_dict": plain}, path,
                   "LOSS:LossKeyCompose")


def _invoke(target: Any, kwargs: Dict[str, Any], path: str, name: str) -> Any:
    try:
        return target(**kwargs)
    except Exception as error:
        hint = _argument_hint(target, kwargs, path)
        raise InstantiationError(
            f"Error building {_where(path)} (target '{name}'): {type(error).__name__}: {error}"
            + (f"\n{hint}" if hint else ""),
            path,
            name,
        ) from error


def _argument_hint(target: Any, kwargs: Dict[str, Any], path: str) -> str:
    """Explain a keyword mismatch between the node and the target's signature, if there is one."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return ""  # no signature available (some builtins)
    try:
        signature.bind(**kwargs)
        return ""  # the arguments fit: the failure happened inside the target
    except TypeError:
        pass
    params = signature.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_ONLY and p.default is p.empty]
    lines = []
    if positional:
        lines.append(
            f"  the target takes positional-only argument(s) {', '.join(positional)}, which a "
            f"node cannot pass (nodes call by keyword); wrap it in a function taking keywords"
        )
    if not takes_any:
        for key in kwargs:
            if key not in params:
                close = difflib.get_close_matches(key, names, n=1)
                guess = f"; did you mean '{join_path(path, close[0])}'?" if close else ""
                lines.append(f"  '{join_path(path, key)}' is not an argument of the target{guess}")
    missing = [
        n for n, p in params.items()
        if p.default is inspect.Parameter.empty and n not in kwargs
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if missing:
        unset = ", ".join(join_path(path, n) for n in missing)
        lines.append(f"  required argument(s) not set: {unset}")
    if names:
        lines.append(f"  the target accepts: {', '.join(names)}")
    return "\n".join(lines)


def instantiate_with(node: Any, **objects: Any) -> Any:
    """Build ``node`` with some arguments replaced by live objects (a model, an optimizer),
    leaving the config itself untouched so it still saves as YAML: one level of the node is
    copied into a plain dict, its children stay shared."""
    if not (is_node(node) or _named(node)):
        raise TypeError(f"expected a LazyCall node with _target_ or a dict(name=...) registry node, got {node!r}")
    return instantiate(node, **objects)
