"""``get_config("common/train.py")``: libai's own configs, from any directory.

Users start from these defaults instead of copying them:
``train = get_config("common/train.py").train``. Where the files are found is decided in
:mod:`libai.config.resources` (the repository's ``configs/`` or the installed copy).
"""
import difflib
import os
from typing import Any, Optional

from libai.config.errors import ConfigError
from libai.config.resources import find_configs_root, list_configs

__all__ = ["get_config"]


def get_config(config_path: str, package_dir: Optional[str] = None) -> Any:
    """Load a built-in config by its path relative to ``configs/``.

    Args:
        config_path: e.g. ``"common/train.py"`` (a leading ``configs/`` is accepted too).
        package_dir: the ``libai`` package folder to look beside; for tests.

    Returns:
        The loaded config (a DictConfig of the file's top-level values).

    Raises:
        ConfigError: no such built-in config; the message lists the ones that exist.
    """
    from libai.config.lazy import LazyConfig  # lazy: lazy.py -> loader -> resources, no cycle

    root = find_configs_root(package_dir)
    relative = config_path.replace("\\", "/")
    if relative.startswith("configs/"):
        relative = relative[len("configs/"):]
    full = os.path.normpath(os.path.join(root, relative))
    if not full.startswith(root + os.sep) or not os.path.isfile(full):
        available = list_configs(root)
        close = difflib.get_close_matches(relative, available, n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        raise ConfigError(
            f"No built-in config '{config_path}' in '{root}'.{hint} Available: "
            + ", ".join(available)
        )
    return LazyConfig.load(full)
