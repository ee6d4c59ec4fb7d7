"""libai's lazy config system.

A config is a tree of plain values and *nodes*: ``LazyCall(Target)(**kwargs)`` records what to
build without building it, so every setting stays visible and editable until
``instantiate(node)`` builds it. ``LazyConfig`` loads configs (Python files that may import
each other, YAML, JSON), saves them as YAML, applies strict command-line overrides, prints them
as Python and compares them. See ``docs/config.md``.
"""
from libai.config.arguments import default_argument_parser
from libai.config.builtin import get_config
from libai.config.configurable import configurable
from libai.config.defaults import (
    LEGACY_KEYS,
    REQUIRED_FIELDS,
    UnknownKey,
    check_required_fields,
    merge_with_defaults,
)
from libai.config.diff import ABSENT, ConfigChange, format_diff
from libai.config.errors import (
    ConfigError,
    ConfigKeyError,
    ConfigLoadError,
    InstantiationError,
    OverrideError,
    OverrideKeyError,
)
from libai.config.instantiate import instantiate, instantiate_with, is_node
from libai.config.lazy import LazyCall, LazyConfig
from libai.config.paths import get_key, try_get_key
from libai.config.registry import (
    DATASET_REGISTRY,
    EVALUATOR_REGISTRY,
    HOOK_REGISTRY,
    LOSS_REGISTRY,
    MODEL_REGISTRY,
    OPTIMIZER_REGISTRY,
    SCHEDULER_REGISTRY,
    TRAINER_REGISTRY,
    TRANSFORM_REGISTRY,
    Registry,
    RegistryError,
    all_registries,
)
from libai.config.registry_style import import_custom_modules, lift_model_ema
from libai.config.targets import locate

__all__ = [
    "LazyCall",
    "LazyConfig",
    "instantiate",
    "instantiate_with",
    "is_node",
    "configurable",
    "get_config",
    "try_get_key",
    "get_key",
    "default_argument_parser",
    "merge_with_defaults",
    "check_required_fields",
    "UnknownKey",
    "LEGACY_KEYS",
    "REQUIRED_FIELDS",
    "ConfigChange",
    "ABSENT",
    "format_diff",
    "locate",
    "ConfigError",
    "ConfigKeyError",
    "ConfigLoadError",
    "InstantiationError",
    "OverrideError",
    "OverrideKeyError",
    "Registry",
    "RegistryError",
    "all_registries",
    "MODEL_REGISTRY",
    "DATASET_REGISTRY",
    "TRANSFORM_REGISTRY",
    "LOSS_REGISTRY",
    "EVALUATOR_REGISTRY",
    "SCHEDULER_REGISTRY",
    "OPTIMIZER_REGISTRY",
    "HOOK_REGISTRY",
    "TRAINER_REGISTRY",
    "import_custom_modules",
    "lift_model_ema",
]
