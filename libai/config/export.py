"""Writing a config out: as YAML (``LazyConfig.save``) and as Python (``LazyConfig.to_py``).

YAML holds only plain values, so objects are handled explicitly. A class or function used as a
``_target_`` is written as its import path, which ``instantiate`` turns back into the object: the
saved config builds the same thing. Anything else that YAML cannot hold (a lambda, a class
defined in a function, an arbitrary object) is *not* silently dropped: a placeholder string
marks its place, a warning names its key path, and the complete config is pickled beside the
YAML file so nothing is lost.
"""
import keyword
import logging
import math
import os
from collections.abc import Mapping
from typing import Any, List, Optional, Set, Tuple

import yaml
from omegaconf._utils import get_omega_conf_dumper

from libai.config.instantiate import TARGET_KEY
from libai.config.paths import join_path, to_plain
from libai.config.targets import describe_target, target_to_string

__all__ = ["to_serializable", "save_yaml", "to_py"]

logger = logging.getLogger(__name__)

_PLAIN = (bool, int, float, str, type(None))
_WIDTH = 96


def _placeholder(value: Any) -> str:
    return f"<not serializable: {type(value).__name__} {describe_target(value)}>"


def _serialize(value: Any, path: str, problems: List[str]) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for key, child in value.items():
            child_path = join_path(path, key)
            if key == TARGET_KEY and not isinstance(child, (str, Mapping)):  # a node target nests
                name = target_to_string(child)
                if name is None:
                    problems.append(child_path)
                out[key] = name if name is not None else _placeholder(child)
            else:
                out[key] = _serialize(child, child_path, problems)
        return out
    if isinstance(value, (list, tuple)):
        return [_serialize(child, join_path(path, i), problems) for i, child in enumerate(value)]
    if isinstance(value, _PLAIN):
        return value
    problems.append(path)
    return _placeholder(value)


def to_serializable(cfg: Any) -> Tuple[Any, List[str]]:
    """``cfg`` as plain YAML-safe containers, and the key paths that had to be replaced.

    Interpolations stay unresolved (``${train.output_dir}``), so they round-trip.
    """
    problems: List[str] = []
    return _serialize(to_plain(cfg), "", problems), problems


def plain_to_yaml(data: Any) -> str:
    """The YAML ``OmegaConf.to_yaml`` writes for plain containers, without building a config
    from them first (a third of the time; every trainer writes its config.yaml when it starts).
    Same dumper, same options: the text is identical."""
    return yaml.dump(data, Dumper=get_omega_conf_dumper(), default_flow_style=False,
                     allow_unicode=True, sort_keys=False)


def _write_atomic(path: str, data: bytes) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a config."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)


def save_yaml(cfg: Any, path: str) -> List[str]:
    """Write ``cfg`` to ``path`` as YAML; return the key paths YAML could not hold.

    When that list is not empty, a warning names each path and the whole config is also written
    with cloudpickle to ``path + ".pkl"`` (``LazyConfig.load`` reads it back). A ``.pkl`` left
    by an earlier save of the same path is removed when it is no longer needed.
    """
    data, problems = to_serializable(cfg)
    _write_atomic(path, plain_to_yaml(data).encode("utf-8"))
    pickle_path = path + ".pkl"
    if not problems:
        if os.path.exists(pickle_path):
            os.remove(pickle_path)
        return problems
    try:
        import cloudpickle

        _write_atomic(pickle_path, cloudpickle.dumps(cfg))
        kept = f"the complete config is pickled in '{pickle_path}'"
    except Exception as error:  # the YAML is written; say exactly what could not be kept
        kept = f"pickling the complete config also failed ({type(error).__name__}: {error})"
    logger.warning(
        "Config saved to '%s', but these values cannot be written as YAML and were replaced by "
        "placeholders: %s; %s.",
        path,
        ", ".join(problems),
        kept,
    )
    return problems


# --------------------------------------------------------------------------------- to_py
def _is_identifier(key: Any) -> bool:
    return isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)


def _literal(value: Any, path: str, notes: Set[str]) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    if isinstance(value, _PLAIN):
        return repr(value)
    name = target_to_string(value)
    if name is not None:
        return f"locate({name!r})"
    notes.add(path)
    return repr(_placeholder(value))


def _parts(value: Any, path: str, indent: Optional[int], notes: Set[str]):
    """Opening text, item texts and closing text of a container."""
    inner = None if indent is None else indent + 4
    if isinstance(value, Mapping):
        items = [(k, v) for k, v in value.items() if k != TARGET_KEY]
        by_name = all(_is_identifier(k) for k, _ in items)
        texts = [
            (f"{k}=" if by_name else f"{k!r}: ") + _format(v, join_path(path, k), inner, notes)
            for k, v in items
        ]
        if TARGET_KEY in value:
            target = value[TARGET_KEY]
            name = target if isinstance(target, str) else target_to_string(target)
            if name is None:
                notes.add(join_path(path, TARGET_KEY))
                name = _placeholder(target)
            if by_name:
                return f"LazyCall({name!r})(", texts, ")"
            return f"LazyCall({name!r})(**{{", texts, "})"
        return ("dict(", texts, ")") if by_name else ("{", texts, "}")
    texts = [_format(v, join_path(path, i), inner, notes) for i, v in enumerate(value)]
    return "[", texts, "]"


def _format(value: Any, path: str, indent: Optional[int], notes: Set[str]) -> str:
    """Python source for ``value``: on one line if it fits, else one item per line."""
    if not isinstance(value, (Mapping, list, tuple)):
        return _literal(value, path, notes)
    opening, items, closing = _parts(value, path, None, notes)
    one_line = opening + ", ".join(items) + closing
    if indent is None or indent + len(one_line) <= _WIDTH or not items:
        return one_line
    opening, items, closing = _parts(value, path, indent, notes)
    pad = " " * (indent + 4)
    return opening + "\n" + "".join(f"{pad}{item},\n" for item in items) + " " * indent + closing


def to_py(cfg: Any, prefix: str = "cfg.") -> str:
    """Readable Python that rebuilds ``cfg``: one ``<prefix><key> = ...`` statement per key.

    Nodes are written as ``LazyCall("dotted.Target")(...)`` and other importable objects as
    ``locate("dotted.name")``. With ``prefix=""`` the text is itself a config file that
    ``LazyConfig.load`` reads back to an equal config.
    """
    notes: Set[str] = set()
    body = [
        f"{prefix}{key} = {_format(value, str(key), 0, notes)}"
        for key, value in to_plain(cfg).items()
    ]
    header = [
        "# Generated by libai.config.LazyConfig.to_py",
        "from libai.config import LazyCall, locate",
    ]
    if notes:
        header.append("# These values are not expressible in Python and hold placeholders:")
        header.extend(f"#   {path}" for path in sorted(notes))
    return "\n".join(header + [""] + body) + "\n"
