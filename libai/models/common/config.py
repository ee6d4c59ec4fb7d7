"""Turn a model config dict into constructor arguments, strictly.

LiBai configs describe a model as one dict (``cfg = dict(hidden_size=768, ...)``), and the same
setting has had several names across model families and versions (``intermediate_size`` /
``ffn_hidden_size``, ``layernorm_eps`` / ``layernorm_epsilon`` ...). :func:`resolve_arguments`
accepts every synonym, maps it to the name the constructor uses, and rejects anything it does
not know with the closest valid name, so a typo in a config fails at build time instead of
silently training the default model.
"""
import difflib
import inspect
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

__all__ = ["SYNONYMS", "resolve_arguments", "merge_config"]

# Each tuple lists names of one setting; any of them may appear in a config.
SYNONYMS: Tuple[Tuple[str, ...], ...] = (
    ("intermediate_size", "ffn_hidden_size"),
    ("hidden_dropout_prob", "output_dropout_prob"),
    ("attention_dropout_prob", "attention_probs_dropout_prob"),
    ("layernorm_epsilon", "layernorm_eps"),
    ("max_seq_length", "max_position_embeddings"),
    ("add_pooler", "add_pooling_layer"),
)


def merge_config(cfg: Optional[Mapping], overrides: Mapping) -> Dict[str, Any]:
    """``cfg`` (a dict or DictConfig, or None) as a plain dict, updated with ``overrides``."""
    merged: Dict[str, Any] = {}
    if cfg is not None:
        if not isinstance(cfg, Mapping) and not hasattr(cfg, "items"):
            raise TypeError(f"a model config must be a dict, got {type(cfg).__name__}")
        merged.update({str(k): v for k, v in cfg.items()})
    merged.update(overrides)
    return merged


def resolve_arguments(
    cfg: Mapping,
    target: Callable,
    owner: str,
    extra: Optional[Mapping[str, Any]] = None,
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Split ``cfg`` into keyword arguments of ``target`` and the ``extra`` settings.

    Args:
        cfg: the model config.
        target: the constructor (``__init__``) whose parameters are the accepted names.
        owner: the class name shown in errors.
        extra: settings the caller handles itself, with their defaults (e.g. a head option).

    Returns:
        ``(arguments for target, extra settings with defaults filled in)``.

    Raises:
        ValueError: an unknown key (with the closest valid name), a setting given under two
            names, or a required argument missing.
    """
    params = _parameter_names(target)
    extra = dict(extra or {})
    known = set(params) | set(extra)
    args: Dict[str, Any] = {}
    extras = dict(extra)
    source: Dict[str, str] = {}
    for key, value in cfg.items():
        name = _canonical(key, known)
        if name is None:
            raise ValueError(_unknown_key_message(owner, key, known))
        if name in source:
            raise ValueError(
                f"{owner}: '{source[name]}' and '{key}' set the same thing; keep one of them"
            )
        source[name] = key
        if name in extra:
            extras[name] = value
        else:
            args[name] = value
    missing = [n for n, required in params.items() if required and n not in args]
    if missing:
        raise ValueError(f"{owner}: the model config does not set {', '.join(missing)}")
    return args, extras


def _parameter_names(target: Callable) -> Dict[str, bool]:
    """Keyword parameter names of ``target`` (minus ``self``) -> whether they are required."""
    signature = inspect.signature(target)
    names: Dict[str, bool] = {}
    for name, param in signature.parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        names[name] = param.default is inspect.Parameter.empty
    return names


def _canonical(key: str, known: Iterable[str]) -> Optional[str]:
    known = set(known)
    if key in known:
        return key
    for group in SYNONYMS:
        if key in group:
            for name in group:
                if name in known:
                    return name
    return None


def _unknown_key_message(owner: str, key: str, known: Iterable[str]) -> str:
    names = sorted(known)
    close = difflib.get_close_matches(str(key), names, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return f"{owner}: unknown model config key '{key}'.{hint} Valid keys: {', '.join(names)}"
