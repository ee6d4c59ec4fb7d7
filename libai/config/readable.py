"""A config as readable Python: ``LazyConfig.to_py(cfg)``.

Meant for people (logs, reviews, "what did this run use?"), in the form LiBai prints: one
statement per setting, dicts flattened into dotted assignments (``cfg.train.amp.enabled = True``,
which is also the spelling of a command-line override), nodes written as the call they stand for
(``cfg.model = mylib.Net(hidden=64)``), keys sorted, and laid out the way the ``black``
formatter would lay it out (88 columns, double quotes, one item per line when a call does not
fit, dict and list literals exploded) so the text is stable and diffs well. It is not meant to be
run: a call in it *makes* the object. ``LazyConfig.to_py(cfg, loadable=True)`` writes a config file
instead (:mod:`libai.config.export`).
"""
import keyword
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, List, Tuple, Union

from omegaconf import DictConfig, ListConfig, OmegaConf

from libai.config.instantiate import RECURSIVE_KEY, TARGET_KEY
from libai.config.paths import to_plain
from libai.config.targets import describe_target, target_to_string

__all__ = ["to_readable_py"]

_LINE = 88  # black's default line length
_INDENT = 4


@dataclass
class _Bracket:
    """A bracketed expression: ``opener item, item closer``; items are (lead text, child)."""

    opener: str
    closer: str
    items: List[Tuple[str, "_Expr"]] = field(default_factory=list)
    literal: bool = False  # a dict/list/tuple literal, which black always explodes when split
    tuple_of_one: bool = False


_Expr = Union[str, _Bracket]


def _quote(text: str) -> str:
    """A string literal in black's preferred double quotes, unless that adds escapes."""
    literal = repr(text)
    if literal.startswith("'") and '"' not in literal:
        return '"' + literal[1:-1].replace("\\'", "'") + '"'
    return literal


def _is_identifier(key: Any) -> bool:
    return isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)


def _key_text(key: Any) -> str:
    return _quote(key) if isinstance(key, str) else repr(key)


def _sorted_items(mapping: Mapping) -> List[Tuple[Any, Any]]:
    return sorted(mapping.items(), key=lambda item: str(item[0]))


def _leaf(value: Any) -> str:
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    if value is None or isinstance(value, (bool, int, float, complex)):
        return repr(value)
    name = target_to_string(value)
    if name is not None:
        return name
    return _quote(f"<not serializable: {type(value).__name__} {describe_target(value)}>")


def _target_text(target: Any) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, Mapping):  # a lazy target: the node that builds the callable
        return _flat(_expr(target))
    return target_to_string(target) or describe_target(target)


def _expr(value: Any) -> _Expr:
    """The expression tree of one value."""
    if isinstance(value, Mapping) and TARGET_KEY in value:
        args = [(k, v) for k, v in _sorted_items(value) if k not in (TARGET_KEY, RECURSIVE_KEY)]
        name = _target_text(value[TARGET_KEY])
        if all(_is_identifier(k) for k, _ in args):
            return _Bracket(f"{name}(", ")", [(f"{k}=", _expr(v)) for k, v in args])
        items = [(f"{_key_text(k)}: ", _expr(v)) for k, v in args]
        return _Bracket(f"{name}(**{{", "})", items, literal=True)
    if isinstance(value, Mapping):
        items = [(f"{_key_text(k)}: ", _expr(v)) for k, v in _sorted_items(value)]
        return _Bracket("{", "}", items, literal=True)
    if isinstance(value, tuple):
        items = [("", _expr(v)) for v in value]
        return _Bracket("(", ")", items, literal=True, tuple_of_one=len(value) == 1)
    if isinstance(value, list):
        return _Bracket("[", "]", [("", _expr(v)) for v in value], literal=True)
    return _leaf(value)


def _flat(expr: _Expr) -> str:
    if isinstance(expr, str):
        return expr
    body = ", ".join(lead + _flat(child) for lead, child in expr.items)
    return expr.opener + body + ("," if expr.tuple_of_one else "") + expr.closer


def _lines(lead: str, expr: _Expr, tail: str, indent: int) -> List[str]:
    """``lead + expr + tail`` at ``indent``, split at ``expr``'s brackets while too long.

    Black's rules for this shape: the bracket's content goes on its own indented line when it
    fits there (a literal with several items is exploded regardless), else one item per line
    with a trailing comma; an item still too long is split the same way.
    """
    pad = " " * indent
    whole = pad + lead + _flat(expr) + tail
    if len(whole) <= _LINE or isinstance(expr, str) or not expr.items:
        return [whole]
    inner = indent + _INDENT
    lines = [pad + lead + expr.opener]
    body = ", ".join(item_lead + _flat(child) for item_lead, child in expr.items)
    if expr.tuple_of_one:
        body += ","
    several = len(expr.items) > 1
    if not (expr.literal and several) and len(" " * inner + body) <= _LINE:
        lines.append(" " * inner + body)
    elif several or expr.tuple_of_one:
        for item_lead, child in expr.items:
            lines.extend(_lines(item_lead, child, ",", inner))
    else:
        (item_lead, child), = expr.items
        lines.extend(_lines(item_lead, child, "", inner))
    lines.append(pad + expr.closer + tail)
    return lines


def _target_path(prefix: str, key: Any) -> str:
    if _is_identifier(key):
        return prefix + str(key)
    return prefix.rstrip(".") + f"[{_key_text(key)}]"


def _statements(mapping: Mapping, prefix: str, out: List[str]) -> None:
    for key, value in _sorted_items(mapping):
        path = _target_path(prefix, key)
        if isinstance(value, Mapping) and value and TARGET_KEY not in value:
            _statements(value, path + ".", out)
        else:
            out.extend(_lines(f"{path} = ", _expr(value), "", 0))


def _resolved(cfg: Any) -> Any:
    """Plain containers with interpolations resolved where they resolve (unresolved if not)."""
    if isinstance(cfg, (DictConfig, ListConfig)):
        try:
            return OmegaConf.to_container(cfg, resolve=True)
        except Exception:  # a dangling interpolation: show the ${...} text instead of failing
            return to_plain(cfg)
    return cfg


def to_readable_py(cfg: Any, prefix: str = "cfg.") -> str:
    """``cfg`` as readable Python statements ``<prefix><dotted key> = <value>`` (see above)."""
    plain = _resolved(cfg)
    if not isinstance(plain, Mapping):
        return "\n".join(_lines(prefix.rstrip(".") + " = ", _expr(plain), "", 0)) + "\n"
    out: List[str] = []
    _statements(plain, prefix, out)
    return "\n".join(out) + "\n" if out else ""
