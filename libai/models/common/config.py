"""Turn a model config dict into constructor arguments.

LiBai configs describe a model as one dict (``cfg = dict(hidden_size=768, ...)``), and the same
setting has had several names across model families and versions (``intermediate_size`` /
``ffn_hidden_size``, ``layernorm_eps`` / ``layernorm_epsilon`` ...). :func:`resolve_arguments`
accepts every synonym and maps it to the name the constructor uses.

A key the model does not know is one of two things. LiBai projects share one config between
their own head and a LiBai model (``cfg.num_classes`` for the head, the rest for
``BertModel(cfg)``), and LiBai's models read the keys they need and ignore the others; so an
unknown key that resembles no valid name is ignored with a warning. An unknown key that
resembles a valid name (``hiden_size``) is almost surely a typo and fails at build time with
the closest valid name, instead of silently training the default model.
"""
import difflib
import inspect
import logging
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

__all__ = ["SYNONYMS", "resolve_arguments", "merge_config"]

logger = logging.getLogger(__name__)
_warned: set = set()

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
    ignored: Iterable[str] = (),
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Split ``cfg`` into keyword arguments of ``target`` and the ``extra`` settings.

    Args:
        cfg: the model config.
        target: the constructor (``__init__``) whose parameters are the accepted names.
        owner: the class name shown in errors.
        extra: settings the caller handles itself, with their defaults (e.g. a head option).
        ignored: keys of the model family that this class does not use (LiBai's BERT configs
            carry ``add_binary_head``, which only ``BertForPreTraining`` reads); dropped silently.

    Returns:
        ``(arguments for target, extra settings with defaults filled in)``.

    Raises:
        ValueError: an unknown key close to a valid name (with that name), a setting given
            under two names, or a required argument missing. Other unknown keys are ignored
            with a warning (see the module docstring).
    """
    params = _parameter_names(target)
    extra = dict(extra or {})
    known = set(params) | set(extra)
    ignored = set(ignored) - known
    args: Dict[str, Any] = {}
    extras = dict(extra)
    source: Dict[str, str] = {}
    for key, value in cfg.items():
        name = _canonical(key, known)
        if name is None:
            if key in ignored:
                continue
            if _closest(key, known):
                raise ValueError(_unknown_key_message(owner, key, known))
            if (owner, key) not in _warned:
                _warned.add((owner, key))
                logger.warning(
                    f"{owner} ignores the config key '{key}': it is not one of its settings "
                    f"(a key for other code sharing this config, as LiBai allows)"
                )
            continue
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


def _closest(key: str, known: Iterable[str]) -> Optional[str]:
    """The valid name ``key`` most resembles, if any (difflib's default 0.6 similarity)."""
    close = difflib.get_close_matches(str(key), sorted(known), n=1)
    return close[0] if close else None


def _unknown_key_message(owner: str, key: str, known: Iterable[str]) -> str:
    names = sorted(known)
    close = difflib.get_close_matches(str(key), names, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return f"{owner}: unknown model config key '{key}'.{hint} Valid keys: {', '.join(names)}"
