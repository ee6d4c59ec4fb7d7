"""Between objects and their import paths: ``"libai.scheduler.WarmupCosineLR"`` <-> the class.

A config names what to build either by the object itself or by a dotted string. Strings survive
being written to YAML; objects do not. These helpers turn one into the other, and are strict
about it: a string that names nothing is an error, and an object is only written as a string
when importing that string gives back the very same object.
"""
import contextlib
import importlib
import os
import sys
from typing import Any, Iterator, Optional

__all__ = ["locate", "target_to_string", "describe_target", "prepend_sys_path"]


@contextlib.contextmanager
def prepend_sys_path(path: str) -> Iterator[None]:
    """Make ``path`` the first import location for the duration of the block.

    Used so that a project run from its own folder can import its modules (``modeling.model``)
    from config files and dotted targets, without permanently changing ``sys.path``.
    """
    already = path in sys.path
    if not already:
        sys.path.insert(0, path)
    try:
        yield
    finally:
        if not already:
            try:
                sys.path.remove(path)
            except ValueError:
                pass


def _is_missing_prefix(error: ModuleNotFoundError, module_name: str) -> bool:
    """True when ``error`` says ``module_name`` itself (or a parent package) does not exist."""
    missing = error.name or ""
    return bool(missing) and (module_name == missing or module_name.startswith(missing + "."))


def _locate_on_path(name: str) -> Any:
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        module_name = ".".join(parts[:split])
        try:
            obj = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if _is_missing_prefix(error, module_name):
                continue
            raise  # the module exists but one of its own imports is missing: report that
        for position, attribute in enumerate(parts[split:], start=split):
            try:
                obj = getattr(obj, attribute)
            except AttributeError:
                owner = ".".join(parts[:position])
                raise ImportError(f"'{owner}' has no attribute '{attribute}' (looking up '{name}')")
        return obj
    raise ImportError(f"No module named '{parts[0]}' (looking up '{name}')")


def locate(name: str) -> Any:
    """The object named by the dotted import path ``name``.

    Tries the normal import path first, then the current working directory (a project run from
    its own folder). Raises ``ImportError`` naming the string when nothing matches; an error
    raised *while importing* an existing module propagates unchanged, since it is the real
    problem.
    """
    parts = name.split(".") if isinstance(name, str) else []
    if not parts or not all(part.isidentifier() for part in parts):
        raise ImportError(
            f"{name!r} is not a dotted import path; write it like 'package.module.ClassName'"
        )
    try:
        return _locate_on_path(name)
    except ImportError as first_error:
        if isinstance(first_error, ModuleNotFoundError) and not _is_missing_prefix(first_error, name):
            raise
        cwd = os.getcwd()
        if cwd in sys.path:
            raise
        with prepend_sys_path(cwd):
            try:
                return _locate_on_path(name)
            except ImportError:
                raise first_error from None


def target_to_string(obj: Any) -> Optional[str]:
    """The shortest dotted path that :func:`locate` turns back into ``obj``, or ``None``.

    ``None`` means the object cannot be named portably: a lambda, a class defined inside a
    function or a config file, or anything from ``__main__`` (another process has a different
    ``__main__``).
    """
    if isinstance(obj, str):
        return obj
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if "<" in qualname or module == "__main__":
        return None
    module_parts = module.split(".")
    for length in range(1, len(module_parts) + 1):
        candidate = ".".join(module_parts[:length] + [qualname])
        try:
            if locate(candidate) is obj:
                return candidate
        except Exception:  # any failure just means this spelling does not work
            continue
    return None


def describe_target(obj: Any) -> str:
    """A readable name of a target for messages: its dotted path when it has one."""
    if isinstance(obj, str):
        return obj
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}.{qualname}"
    return repr(obj)
