"""Lazy configs: describe objects now, build them later.

``LazyCall(Target)(**kwargs)`` records *what* to build as a config node instead of building it,
so every argument stays visible and editable (by a derived config, by a command-line override)
until :func:`~libai.config.instantiate` finally builds it. :class:`LazyConfig` reads, writes,
overrides, prints and compares whole configs made of such nodes and plain values.
"""
import dataclasses
import inspect
import json
import os
from collections.abc import Mapping
from typing import Any, List, Sequence, Union

from omegaconf import DictConfig, ListConfig, OmegaConf

from libai.config.diff import ConfigChange, diff_configs
from libai.config.errors import ConfigError, ConfigKeyError, ConfigLoadError
from libai.config.export import save_yaml, to_py
from libai.config.instantiate import TARGET_KEY
from libai.config.loader import CONFIG_FLAGS, load_python_config
from libai.config.overrides import apply_overrides
from libai.config.paths import closest_paths
from libai.config.readable import to_readable_py
from libai.config.registry_style import import_custom_modules
from libai.config.targets import target_to_string

__all__ = ["LazyCall", "LazyConfig"]



def _storable(target: Any) -> Any:
    """``target`` in a form a DictConfig keeps as is.

    omegaconf expands a dataclass (or attrs) class into its fields and rejects ``dict`` itself,
    so those targets are stored as their import path, which ``instantiate`` resolves the same.
    """
    special = target is dict or (
        isinstance(target, type)
        and (dataclasses.is_dataclass(target) or hasattr(target, "__attrs_attrs__"))
    )
    if not special:
        return target
    name = target_to_string(target)
    if name is None:
        raise TypeError(
            f"LazyCall target {target!r} is a dataclass/attrs class that cannot be imported by "
            f"name (defined in a function or in __main__?); move it to a module"
        )
    return name


class LazyCall:
    """Wrap a target so that calling it records a config node instead of calling it.

    Example::

        model = LazyCall(MyModel)(hidden_size=64, head=LazyCall("mylib.Head")(classes=10))
        model.hidden_size = 128          # still editable
        net = instantiate(model)         # MyModel(hidden_size=128, head=mylib.Head(classes=10))

    Args:
        target: a class, a function, or a dotted import string (``"libai.scheduler.WarmupCosineLR"``);
            a string keeps the config loadable even before that module exists or is importable.
            A node (``LazyCall(make_class)(...)``) is also accepted: ``instantiate`` builds it
            first and calls what it returns.
    """

    def __init__(self, target: Any) -> None:
        if isinstance(target, str):
            parts = target.split(".")
            if not all(part.isidentifier() for part in parts):
                raise TypeError(
                    f"LazyCall target {target!r} is not a dotted import path; write it like "
                    f"'package.module.ClassName'"
                )
        elif isinstance(target, Mapping) and TARGET_KEY not in target:
            raise TypeError(
                f"LazyCall target {target!r} is a dict without '{TARGET_KEY}'; a dict target must "
                f"be a node that builds the callable (LazyCall(factory)(...))"
            )
        elif not callable(target) and not isinstance(target, Mapping):
            raise TypeError(
                f"LazyCall target must be a class, a function, a dotted string or a node that "
                f"builds one, got {target!r} of type {type(target).__name__}"
            )
        self._target = _storable(target)

    def __call__(self, **kwargs: Any) -> DictConfig:
        """A node holding ``_target_`` and ``kwargs`` (keyword arguments only)."""
        if TARGET_KEY in kwargs:
            raise TypeError(f"'{TARGET_KEY}' is reserved for the target; pass it to LazyCall(...)")
        return DictConfig({TARGET_KEY: self._target, **kwargs}, flags=CONFIG_FLAGS)

    def __repr__(self) -> str:
        return f"LazyCall({self._target!r})"


def _select(cfg: DictConfig, keys: Union[str, Sequence[str]], path: str) -> Any:
    """``cfg[keys]`` for one key, a tuple of values for several."""
    wanted = [keys] if isinstance(keys, str) else list(keys)
    for key in wanted:
        if key not in cfg:
            close = closest_paths(key, [str(k) for k in cfg.keys()])
            hint = f" Did you mean {' or '.join(close)}?" if close else ""
            raise ConfigKeyError(
                f"Config file '{path}' defines no '{key}'; it defines: "
                f"{', '.join(map(str, cfg.keys())) or 'nothing'}.{hint}",
                key,
                close,
            )
    values = tuple(cfg[key] for key in wanted)
    return values[0] if isinstance(keys, str) else values


def _is_container(value: Any) -> bool:
    """Whether a top-level value of a Python config file is part of the config (see load)."""
    return isinstance(value, (Mapping, list, tuple, ListConfig))


def _load_data_file(path: str) -> Any:
    suffix = os.path.splitext(path)[1].lower()
    if suffix in (".yaml", ".yml"):
        return OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    if suffix == ".json":
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    if suffix == ".pkl":
        import cloudpickle

        with open(path, "rb") as handle:
            return cloudpickle.load(handle)
    raise ConfigError(
        f"Cannot load config '{path}': unknown file type '{suffix}'; "
        f"use .py, .yaml, .yml, .json, or a .pkl written by LazyConfig.save"
    )


class LazyConfig:
    """Read, write, override, print and compare configs. All methods are static."""

    @staticmethod
    def load(path: str, keys: Union[None, str, Sequence[str]] = None) -> Any:
        """Load a config file: ``.py``, ``.yaml``/``.yml``, ``.json``, or a ``.pkl`` from :meth:`save`.

        A ``.py`` file is run as Python (see :mod:`libai.config.loader` for how its imports
        resolve); its public dicts, nodes and lists form the config. Its modules, functions and
        classes are left out, and so are top-level numbers and strings: those are the file's
        own constants (``hidden = 768`` used further down), and keeping them would offer
        overrides that change nothing. ``keys=`` can still fetch any public value by name.

        Args:
            path: the config file.
            keys: ``None`` for the whole config; one top-level name for that value; a list/tuple
                of names for a tuple of values.

        Raises:
            FileNotFoundError: ``path`` does not exist.
            ConfigLoadError: the file failed to run; the message names the file and line.
        """
        path = os.path.abspath(os.path.expanduser(path))
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"Config file '{path}' does not exist (current directory: {os.getcwd()})"
            )
        if path.endswith(".py"):
            content: Any = load_python_config(path)
        else:
            try:
                content = _load_data_file(path)
            except ConfigError:
                raise
            except Exception as error:
                raise ConfigLoadError(path, None, f"{type(error).__name__}: {error}") from error
        if isinstance(content, DictConfig):  # a pickled config
            content = OmegaConf.to_container(content, resolve=False)
        if isinstance(content, Mapping):
            if keys is None and path.endswith(".py"):
                content = {k: v for k, v in content.items() if _is_container(v)}
            cfg = DictConfig(dict(content), flags=CONFIG_FLAGS)
        else:
            raise ConfigLoadError(
                path,
                None,
                f"the top level must map names to values, got {type(content).__name__}",
            )
        import_custom_modules(cfg, path)  # registry-style configs name the modules to import
        return cfg if keys is None else _select(cfg, keys, path)

    @staticmethod
    def load_rel(path: str, keys: Union[None, str, Sequence[str]] = None) -> Any:
        """:meth:`load` with ``path`` taken relative to the config file that calls it.

        For a config file whose name is not an identifier (``base-1.5b.py``) and so cannot be
        imported with ``from .base import ...``. Each call is a fresh load, so the values it
        returns are unaffected by edits other config files made to the same file's values.

        Raises:
            ConfigError: not called from a file (an interactive session has no "relative to").
        """
        caller = inspect.currentframe()
        caller = caller.f_back if caller is not None else None
        caller_file = caller.f_globals.get("__file__") if caller is not None else None
        if not caller_file or not os.path.isfile(caller_file):
            caller_file = caller.f_code.co_filename if caller is not None else ""
        if not caller_file or not os.path.isfile(caller_file):
            raise ConfigError(
                f"LazyConfig.load_rel({path!r}) must be called from a config file; elsewhere "
                f"use LazyConfig.load with a path"
            )
        return LazyConfig.load(os.path.join(os.path.dirname(caller_file), path), keys)

    @staticmethod
    def save(cfg: Any, path: str) -> List[str]:
        """Write ``cfg`` as YAML that :meth:`load` reads back equal.

        Classes and functions used as ``_target_`` are written as their import path. Values YAML
        cannot hold are listed in a logged warning and returned, and the whole config is also
        pickled to ``path + ".pkl"``.
        """
        return save_yaml(cfg, path)

    @staticmethod
    def apply_overrides(cfg: Any, overrides: Sequence[str]) -> Any:
        """Apply command-line style ``key=value`` overrides in place and return ``cfg``.

        Strict: an unknown key is an error suggesting the closest existing ones; add a new key
        with a leading ``+``. See :mod:`libai.config.overrides` for how values are parsed.
        """
        return apply_overrides(cfg, overrides)

    @staticmethod
    def to_py(cfg: Any, prefix: str = "cfg.", loadable: bool = False) -> str:
        """``cfg`` as Python source.

        By default, for reading (LiBai's form, see :mod:`libai.config.readable`): one
        ``cfg.<dotted key> = value`` line per setting, nodes shown as the calls they make.
        With ``loadable=True``, a config file instead: one ``<prefix><name> = ...`` statement
        per top-level name, nodes as ``LazyCall("dotted.Target")(...)``; with ``prefix=""``
        :meth:`load` reads it back to an equal config (see :mod:`libai.config.export`).
        """
        if loadable:
            return to_py(cfg, prefix=prefix)
        return to_readable_py(cfg, prefix=prefix)

    @staticmethod
    def diff(old: Any, new: Any) -> List[ConfigChange]:
        """The dotted keys whose values differ from ``old`` to ``new`` (added, removed, changed)."""
        return diff_configs(old, new)

