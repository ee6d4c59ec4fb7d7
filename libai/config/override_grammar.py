"""Reading one ``key=value`` override: hydra-core's override grammar, plus libai's few extras.

Upstream LiBai (like detectron2) parses command-line overrides with hydra-core's
``OverridesParser``, so this module does too: every value hydra's grammar gives, libai gives
(``[data/train.tsv]`` is a one-element list, ``{a: 1}`` a dict, ``inf`` a float, ``a\\,b`` the
string ``a,b``, ``0x10`` the string ``0x10``, ``1,2`` a sweep), and a malformed value
(``x=[a,b``) is refused instead of being taken as a string.

libai keeps three spellings that it documented before it followed hydra, none of which hydra's
grammar accepts or reads the same way (``docs/config.md`` has the table):

- list indices in keys: ``dataloader.test[0].batch_size`` (hydra: ``dataloader.test.0.batch_size``);
- Python literals hydra cannot parse: tuples ``(0.9, 0.99)`` and dicts with quoted keys
  ``{'a': 1}`` are read with :func:`ast.literal_eval` (tuples become lists, as in any config);
- ``None`` is Python's None (hydra reads it as the string ``'None'``; its spelling is ``null``).

Sweeps (``a=1,2``, ``choice(...)``, ``range(...)``) belong to hydra's multirun, which libai does
not have: they are refused with the spellings of a list and of a string.
"""
import ast
import re
from dataclasses import dataclass
from typing import Any, Optional

from libai.config.errors import OverrideError

__all__ = ["Override", "parse_override_text"]

# ``~key``, ``+key``, ``++key``, then the key up to the first '='.
_SHAPE = re.compile(r"^\s*(?P<prefix>~|\+\+|\+)?(?P<key>[^=]*?)\s*(?:=(?P<value>.*))?$", re.S)
_INDEX = re.compile(r"\[(-?\d+)\]")
_PARSER: Any = None


@dataclass(frozen=True)
class Override:
    """One parsed override.

    ``action`` is ``"set"`` (``key=value``), ``"add"`` (``+key=value``: the key must be new),
    ``"force"`` (``++key=value``: set or add, and the value may change the key's kind) or
    ``"delete"`` (``~key`` or ``~key=value``; with a value, only if the key holds it).
    """

    text: str
    key: str
    value: Any
    action: str
    has_value: bool


def _hydra_parser() -> Any:
    """hydra's parser, built once (importing hydra costs ~0.1 s, so only when needed)."""
    global _PARSER
    if _PARSER is None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        _PARSER = OverridesParser.create()
    return _PARSER


def _python_literal(text: str) -> Optional[Any]:
    """A tuple, list or dict written as a Python literal (libai's older spelling), as plain
    lists and dicts; None when ``text`` is not such a literal."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, (tuple, list, dict)):
        return None

    def plain(item: Any) -> Any:
        if isinstance(item, (tuple, list)):
            return [plain(x) for x in item]
        if isinstance(item, dict):
            return {k: plain(v) for k, v in item.items()}
        return item

    return plain(value)


def _refuse_sweep(text: str, key: str, raw: str) -> OverrideError:
    items = raw.strip()
    return OverrideError(
        f"Override {text!r}: '{raw.strip()}' is hydra's sweep syntax (several runs, hydra's "
        f"multirun), which libai does not run. For a list write '{key}=[{items}]'; for a string "
        f"containing commas quote it: \"{key}='{items}'\" (or escape them: {key}={items.replace(',', chr(92) + ',')})."
    )


def parse_override_text(text: str) -> Override:
    """Parse one override string; raise :class:`OverrideError` naming what is wrong."""
    if not isinstance(text, str):
        raise OverrideError(f"Override {text!r} is not a string of the form key=value")
    shape = _SHAPE.match(text)
    prefix, key, raw = shape.group("prefix") or "", shape.group("key"), shape.group("value")
    if raw is None and prefix != "~":
        raise OverrideError(
            f"Override {text!r} is not of the form key=value (e.g. train.train_iter=100)"
        )
    if not key.strip():
        raise OverrideError(f"Override {text!r} has no key before '='")
    key = _INDEX.sub(r".\1", key.strip())
    if raw is not None and raw.strip() == "None":
        value: Any = None  # libai's documented spelling of null (see the module docstring)
    else:
        value = _hydra_value(text, prefix, key, raw)
    action = {"": "set", "+": "add", "++": "force", "~": "delete"}[prefix]
    return Override(text=text, key=key, value=value, action=action, has_value=raw is not None)


def _hydra_value(text: str, prefix: str, key: str, raw: Optional[str]) -> Any:
    from hydra.errors import HydraException

    hydra_text = f"{prefix}{key}" + ("" if raw is None else f"={raw}")
    try:
        parsed = _hydra_parser().parse_override(hydra_text)
    except HydraException as error:
        literal = None if raw is None else _python_literal(raw)
        if literal is not None:
            return literal
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise OverrideError(
            f"Override {text!r} does not parse in hydra's override grammar ({reason}). "
            "Lists are [a,b], dicts {a: 1}; quote a string that holds brackets, braces, commas, "
            f"'=' or quotes: \"{key}='...'\"."
        ) from None
    if parsed.package is not None:
        raise OverrideError(
            f"Override {text!r}: '@package' names hydra config groups, which libai configs do "
            "not have; name the key by its dotted path (e.g. train.amp.enabled=true)"
        )
    if parsed.is_sweep_override():
        raise _refuse_sweep(text, key, raw or "")
    return parsed.value()
