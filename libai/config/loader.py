"""Run a Python config file and collect its config values.

A config file is ordinary Python, executed afresh on every load, with one difference: its
imports understand config files. Inside a config file,

- ``from .base import model`` / ``from ..common.train import train`` load the sibling/parent
  config *file* (config folders need no ``__init__.py``);
- ``from configs.common.train import train`` loads libai's built-in config (see
  :mod:`libai.config.resources`), or else ``./configs/common/train.py`` of the current directory;
- any other import finds modules in the current working directory first (a project run from its
  own folder imports ``modeling.model``), then installed packages.

Config files are never put in ``sys.modules``: each ``LazyConfig.load`` call runs them again, so
one load's edits (``train.amp.enabled = True``) cannot leak into the next. Within one load, a file
imported twice is run once, as Python would. The import hook is installed only in the config
files' own ``__builtins__``, never process-wide.

Top-level ``dict``s of every config file become ``DictConfig``s, so a file that imports ``train``
can write ``train.amp.enabled = True``.
"""
import builtins
import inspect
import os
import sys
import traceback
import types
from typing import Any, Dict, List, Optional, Sequence

from omegaconf import DictConfig

from libai.config.errors import ConfigError, ConfigLoadError
from libai.config.resources import find_configs_root
from libai.config.targets import prepend_sys_path

__all__ = ["load_python_config", "is_config_value", "CONFIG_FLAGS"]

CONFIG_FLAGS = {"allow_objects": True}
_CONFIGS_PACKAGE = "configs"


def is_config_value(name: str, value: Any) -> bool:
    """Whether a config file's global ``name`` belongs in the loaded config.

    Modules, classes, functions and other callables are the file's tools, not its settings
    (``import oneflow as flow``, ``from libai.config import LazyCall``), and private names are
    helpers; they are left out. Classes used *inside* nodes (``_target_``) are kept there.
    """
    if name.startswith("_"):
        return False
    return not (inspect.ismodule(value) or inspect.isclass(value) or callable(value))


def _error_line(error: BaseException, path: str) -> Optional[int]:
    """The line of ``path`` where ``error`` happened: the innermost frame in that file."""
    if isinstance(error, SyntaxError) and error.filename == path:
        return error.lineno
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == path:
            line = frame.lineno
    return line


class _ConfigImporter:
    """The imports of one load: which config files ran, and how names resolve."""

    def __init__(self, configs_roots: Sequence[str], cwd: str) -> None:
        self._roots = [root for root in configs_roots if os.path.isdir(root)]
        self._cwd = cwd
        self._modules: Dict[str, types.ModuleType] = {}
        self._running: List[str] = []
        self._builtins = dict(vars(builtins), __import__=self._import)

    # ------------------------------------------------------------------ running files
    def run_file(self, path: str) -> types.ModuleType:
        """Execute the config file ``path`` (once per load) and return its module object."""
        path = os.path.abspath(path)
        if path in self._modules:
            return self._modules[path]
        if path in self._running:
            cycle = " -> ".join(self._running[self._running.index(path):] + [path])
            raise ImportError(f"config files import each other in a cycle: {cycle}")
        module = types.ModuleType(f"<libai config {path}>")
        module.__file__ = path
        module.__dict__["__builtins__"] = self._builtins
        self._running.append(path)
        try:
            self._execute(path, module)
        finally:
            self._running.pop()
        self._modules[path] = module
        return module

    def _execute(self, path: str, module: types.ModuleType) -> None:
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
        except OSError as error:
            raise ConfigLoadError(path, None, f"cannot read the file: {error}") from error
        try:
            exec(compile(source, path, "exec"), module.__dict__)
        except ConfigLoadError as inner:  # an imported config file failed: say who imported it
            inner.add_importer(path, _error_line(inner, path))
            raise
        except Exception as error:
            reason = f"{type(error).__name__}: {error}"
            raise ConfigLoadError(path, _error_line(error, path), reason) from error
        for name, value in list(vars(module).items()):
            if isinstance(value, dict) and not name.startswith("_"):
                try:
                    module.__dict__[name] = DictConfig(value, flags=CONFIG_FLAGS)
                except Exception as error:
                    raise ConfigLoadError(
                        path, None, f"top-level '{name}' cannot be made a config: {error}"
                    ) from error

    def _load(self, target: str) -> types.ModuleType:
        """A config file's module, or a package object standing for a config folder."""
        if not os.path.isdir(target):
            return self.run_file(target)
        if target not in self._modules:
            package = types.ModuleType(f"<libai config folder {target}>")
            package.__path__ = [target]  # type: ignore[attr-defined]
            self._modules[target] = package
        return self._modules[target]

    def _load_chain(self, base: str, parts: Sequence[str]):
        """Load ``base`` and each of ``parts`` below it, each bound as an attribute of its
        folder (as Python binds submodules); return the first and the last."""
        top = node = self._load(base)
        folder = base
        for index, part in enumerate(parts):
            path = os.path.join(folder, part)
            is_last = index == len(parts) - 1
            target = path + ".py" if is_last and os.path.isfile(path + ".py") else path
            child = self._load(target)
            setattr(node, part, child)
            node, folder = child, path
        return top, node

    # ------------------------------------------------------------------ resolving names
    @staticmethod
    def _resolve(base: str, parts: Sequence[str]) -> Optional[str]:
        """The config file or folder that ``parts`` names under ``base``, or ``None``."""
        if not parts:
            return base if os.path.isdir(base) else None
        stem = os.path.join(base, *parts)
        if os.path.isfile(stem + ".py"):
            return stem + ".py"
        return stem if os.path.isdir(stem) else None

    def _fill_fromlist(self, module: types.ModuleType, fromlist: Sequence[str]) -> None:
        """For ``from <folder> import name``: load the files the names refer to."""
        folders = getattr(module, "__path__", None)
        if not folders:
            return
        for name in fromlist or ():
            if name != "*" and not hasattr(module, name):
                target = self._resolve(folders[0], [name])
                if target is not None:
                    setattr(module, name, self._load(target))

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        """The ``__import__`` seen by config files."""
        importer = (globals or {}).get("__file__")
        if level > 0:
            return self._import_relative(name, importer, fromlist, level)
        if name == _CONFIGS_PACKAGE or name.startswith(_CONFIGS_PACKAGE + "."):
            module = self._import_configs(name, fromlist)
            if module is not None:
                return module
            try:
                return self._import_installed(name, globals, locals, fromlist, level)
            except ModuleNotFoundError as error:
                wanted = name.replace(".", "/")
                raise ModuleNotFoundError(
                    f"no config '{wanted}.py' in {self._roots or 'any configs/ folder'}"
                ) from error
        return self._import_installed(name, globals, locals, fromlist, level)

    def _import_relative(self, name: str, importer: Optional[str], fromlist, level: int):
        if not importer:
            raise ImportError(f"relative import '{'.' * level}{name}' outside a config file")
        base = os.path.dirname(importer)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        parts = name.split(".") if name else []
        target = self._resolve(base, parts)
        if target is None:
            expected = os.path.join(base, *parts) + ".py" if parts else base
            raise ImportError(
                f"relative import '{'.' * level}{name}': no config file '{expected}'"
            )
        module = self._load_chain(base, parts)[1]
        self._fill_fromlist(module, fromlist)
        return module

    def _import_configs(self, name: str, fromlist) -> Optional[types.ModuleType]:
        parts = name.split(".")[1:]
        for root in self._roots:
            target = self._resolve(root, parts)
            if target is not None:
                break
        else:
            return None
        top, module = self._load_chain(root, parts)
        if not fromlist:
            return top  # ``import configs.common.train`` binds the name ``configs``
        self._fill_fromlist(module, fromlist)
        return module

    def _import_installed(self, name, globals, locals, fromlist, level):  # noqa: A002
        top = name.partition(".")[0]
        in_cwd = os.path.isfile(os.path.join(self._cwd, top + ".py")) or os.path.isdir(
            os.path.join(self._cwd, top)
        )
        if in_cwd and top not in sys.modules:
            with prepend_sys_path(self._cwd):
                return builtins.__import__(name, globals, locals, fromlist, level)
        return builtins.__import__(name, globals, locals, fromlist, level)


def _default_roots(cwd: str) -> List[str]:
    roots = []
    try:
        roots.append(find_configs_root())
    except ConfigError:
        pass  # no built-in configs installed: only the current directory's configs/ is searched
    local = os.path.join(cwd, _CONFIGS_PACKAGE)
    if local not in roots:
        roots.append(local)
    return roots


def load_python_config(path: str) -> Dict[str, Any]:
    """Execute the config file ``path`` and return its config values by name.

    ``configs.*`` imports are looked up in the built-in configs, then in ``./configs``.

    Raises:
        ConfigLoadError: the file (or a config file it imports) failed; names file and line.
    """
    cwd = os.getcwd()
    module = _ConfigImporter(_default_roots(cwd), cwd).run_file(path)
    return {name: value for name, value in vars(module).items() if is_config_value(name, value)}
