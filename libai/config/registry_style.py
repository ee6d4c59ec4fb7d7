"""Two settings of registry-style configs, translated onto libai's own pieces.

- ``custom_imports = ["my_project.modeling", ...]`` (top level): modules imported when the
  config is loaded, so that their ``@MODEL_REGISTRY.register()`` decorators run before any
  ``dict(name=...)`` is built. A YAML config has no ``import`` statement; this is its way to
  make a user's classes known. mmcv's spelling ``dict(imports=[...],
  allow_failed_imports=False)`` is accepted too.
- ``model.ema = dict(enable=True, decay_rate=0.995)``: the EMA of the weights is a training
  setting in libai (``train.ema``, run by the engine's ``EMAHook``, which reads the aliases
  ``enable``/``decay_rate`` as ``enabled``/``decay``). :func:`lift_model_ema` moves it there;
  the model itself never receives ``ema``.
"""
import importlib
from collections.abc import Mapping
from typing import Any, List

from omegaconf import DictConfig

from libai.config.errors import ConfigError

__all__ = ["CUSTOM_IMPORTS_KEY", "import_custom_modules", "lift_model_ema"]

CUSTOM_IMPORTS_KEY = "custom_imports"


def _module_names(value: Any) -> List[str]:
    if isinstance(value, (Mapping, DictConfig)):
        value = value.get("imports", [])
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in value]


def import_custom_modules(cfg: Any, config_path: str = "") -> List[str]:
    """Import every module listed under the config's top-level ``custom_imports``.

    Returns:
        The module names imported (``[]`` when the key is absent).

    Raises:
        ConfigError: a module cannot be imported (unless ``allow_failed_imports=True`` in the
            dict form); the message names the module, the config and the usual cause.
    """
    if not isinstance(cfg, (Mapping, DictConfig)) or CUSTOM_IMPORTS_KEY not in cfg:
        return []
    value = cfg[CUSTOM_IMPORTS_KEY]
    allow_failed = bool(value.get("allow_failed_imports", False)) if isinstance(
        value, (Mapping, DictConfig)) else False
    names = _module_names(value)
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            if allow_failed:
                continue
            where = f" of '{config_path}'" if config_path else ""
            raise ConfigError(
                f"custom_imports{where} lists {name!r}, which cannot be imported ({error}). "
                f"Run from the directory that contains its package (tools/train_net.py adds the "
                f"repository root), or install it"
            ) from error
    return names


def lift_model_ema(cfg: Any) -> bool:
    """Move a registry-style ``model.ema`` dict into ``train.ema`` (key by key, over what
    ``train.ema`` already holds) and drop it from ``model``.

    Only a ``dict(name=...)`` model node is touched: a ``LazyCall`` model's arguments are the
    model's own. Returns whether anything moved. Idempotent.
    """
    model = cfg.get("model") if isinstance(cfg, (Mapping, DictConfig)) else None
    if not isinstance(model, (Mapping, DictConfig)) or "_target_" in model or "name" not in model:
        return False
    ema = model.get("ema")
    if ema is None:
        return False
    if not isinstance(ema, (Mapping, DictConfig)):
        raise ConfigError(
            f"model.ema must be a dict like dict(enable=True, decay_rate=0.995), got {ema!r}"
        )
    train = cfg.get("train")
    if train is None:
        raise ConfigError("model.ema is set but the config has no 'train' to hold it (train.ema)")
    current = train.get("ema")
    merged = dict(current.items()) if isinstance(current, (Mapping, DictConfig)) else {}
    merged.update(dict(ema.items()))
    train["ema"] = merged
    del model["ema"]
    return True
