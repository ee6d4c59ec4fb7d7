"""``@configurable``: one class (or function), two ways to call it.

A layer or model is most readable with explicit keyword arguments (``Block(hidden=64, heads=4)``),
while older configs hand over a single config dict (``Block(cfg)``). Decorating ``__init__`` with
``@configurable`` accepts both, so the class is written once in the explicit style:

- keyword style: ``Block(hidden=64, heads=4)`` calls ``__init__`` unchanged;
- config style: ``Block(cfg)`` with a dict or DictConfig as the single positional argument, or
  ``Block(cfg=cfg)`` by keyword as LiBai's configs write it (``LazyCall(Block)(cfg=cfg)``),
  turns the config into keyword arguments, through the class's ``from_config`` classmethod
  when it has one, else key for key. Extra keywords (``Block(cfg, heads=8)``) go to
  ``from_config`` if it names them and otherwise override what it returned. A callable with a
  ``cfg`` parameter of its own receives ``cfg=`` unchanged, unless it has a ``from_config`` and
  the value is a ``DictConfig``: then, as in LiBai, ``from_config`` decides.

Because the first positional argument being a mapping is what selects the config style, a
configurable callable cannot take a dict as its first *positional* argument (pass it by keyword).
"""
import difflib
import functools
import inspect
from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional

from omegaconf import DictConfig, OmegaConf

__all__ = ["configurable"]


def _split_extras(mapper: Callable, extras: Dict[str, Any]):
    """Extras that ``mapper`` accepts by name, and the rest."""
    try:
        params = inspect.signature(mapper).parameters
    except (TypeError, ValueError):
        return {}, dict(extras)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(extras), {}
    taken = {k: v for k, v in extras.items() if k in params}
    return taken, {k: v for k, v in extras.items() if k not in params}


def _check_arguments(func: Callable, kwargs: Dict[str, Any], owner: str, skip_first: bool) -> None:
    """Fail clearly when config keys do not match the parameters of ``func``."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return
    params = params[1:] if skip_first else params
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [key for key in kwargs if key not in names]
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), names, n=1)
            hints.append(f"'{key}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        raise TypeError(
            f"{owner}: config key(s) {', '.join(hints)} are not arguments; it accepts: "
            f"{', '.join(names)}"
        )
    missing = [
        p.name for p in params
        if p.default is p.empty and p.name not in kwargs and p.name in names
    ]
    if missing:
        raise TypeError(f"{owner}: the config does not set required argument(s) {', '.join(missing)}")


def _config_to_kwargs(
    cfg: Any, extras: Dict[str, Any], mapper: Optional[Callable], owner: str
) -> Dict[str, Any]:
    if mapper is None:
        plain = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
        return {**plain, **extras}
    given, rest = _split_extras(mapper, extras)
    mapped = mapper(cfg, **given)
    if not isinstance(mapped, Mapping):
        raise TypeError(
            f"{owner}: from_config must return a dict of keyword arguments, got {type(mapped).__name__}"
        )
    return {**mapped, **rest}


def _is_config_call(args: tuple) -> bool:
    return len(args) >= 1 and isinstance(args[0], (Mapping, DictConfig))


def _takes_cfg(func: Callable) -> bool:
    """Whether ``func`` has a parameter of its own named ``cfg`` (then ``cfg=`` is its own)."""
    try:
        return "cfg" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _config_args(
    func: Callable, args: tuple, kwargs: Dict[str, Any], has_mapper: bool
) -> Optional[tuple]:
    """``(cfg, other keywords)`` when this is a config-style call, else None.

    The config comes first positionally (``Block(cfg)``) or, as LiBai's configs write it,
    by keyword (``LazyCall(Block)(cfg=cfg)`` calls ``Block(cfg=cfg)``). When ``func`` has a
    ``cfg`` parameter of its own, a keyword ``cfg=`` still goes through ``from_config`` if the
    class has one and the value is a ``DictConfig`` (LiBai's rule: its Llama-family projects
    take ``cfg`` in ``__init__`` and return it from ``from_config``); otherwise it is passed on.
    """
    if _is_config_call(args):
        return args[0], kwargs
    given = kwargs.get("cfg")
    if args or not isinstance(given, (Mapping, DictConfig)):
        return None
    if _takes_cfg(func) and not (has_mapper and isinstance(given, DictConfig)):
        return None
    rest = dict(kwargs)
    return rest.pop("cfg"), rest


def _reject_extra_positionals(args: tuple, owner: str) -> None:
    if len(args) > 1:
        raise TypeError(
            f"{owner}: called with a config and {len(args) - 1} more positional argument(s); "
            f"pass everything besides the config by keyword"
        )


def _wrap_init(init: Callable, from_config: Optional[Callable]) -> Callable:
    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        mapper = from_config or getattr(type(self), "from_config", None)
        call = _config_args(init, args, kwargs, has_mapper=mapper is not None)
        if call is None:
            return init(self, *args, **kwargs)
        owner = type(self).__name__
        _reject_extra_positionals(args, owner)
        built = _config_to_kwargs(call[0], call[1], mapper, owner)
        _check_arguments(init, built, owner, skip_first=True)
        return init(self, **built)

    return wrapper


def _wrap_function(func: Callable, from_config: Optional[Callable]) -> Callable:
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        call = _config_args(func, args, kwargs, has_mapper=from_config is not None)
        if call is None:
            return func(*args, **kwargs)
        owner = func.__qualname__
        _reject_extra_positionals(args, owner)
        built = _config_to_kwargs(call[0], call[1], from_config, owner)
        _check_arguments(func, built, owner, skip_first=False)
        return func(**built)

    return wrapper


def configurable(
    func: Optional[Callable] = None, *, from_config: Optional[Callable] = None
) -> Callable:
    """Let ``__init__`` (or a function) be called with keyword arguments or with one config.

    Use bare on ``__init__`` (the class may define a ``from_config(cls, cfg, ...)`` classmethod
    returning the keyword arguments), or with ``from_config=`` on a function or ``__init__``::

        class Head:
            @configurable
            def __init__(self, in_features: int, classes: int = 10): ...

            @classmethod
            def from_config(cls, cfg):
                return {"in_features": cfg.hidden_size, "classes": cfg.num_classes}

        Head(in_features=64)                      # keyword style
        Head({"hidden_size": 64, "num_classes": 3})  # config style, through from_config

        @configurable(from_config=lambda cfg: {"size": cfg["hidden"]})
        def build_head(size: int): ...

    A config whose keys do not match the arguments raises ``TypeError`` naming the keys.
    """
    if func is None:
        return lambda f: configurable(f, from_config=from_config)
    if not callable(func):
        raise TypeError(f"@configurable decorates a function or __init__, got {func!r}")
    if from_config is not None and not callable(from_config):
        raise TypeError(f"from_config must be callable, got {from_config!r}")
    if func.__name__ == "__init__":
        return _wrap_init(func, from_config)
    return _wrap_function(func, from_config)
