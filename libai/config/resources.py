"""Where the built-in configs live, in a source checkout and after ``pip install``.

In a checkout (or an editable install) they are the repository's ``configs/`` folder, beside the
``libai`` package. A regular install has no repository, so ``setup.py`` copies the folder into the
package as ``libai/config/configs``. Both places are tried, in that order, so edits in a checkout
are seen immediately and an installed copy works from any directory.
"""
import os
from typing import List, Optional

from libai.config.errors import ConfigError

__all__ = ["find_configs_root", "list_configs", "CONFIG_SUFFIXES"]

CONFIG_SUFFIXES = (".py", ".yaml", ".yml", ".json")
# A folder counts as the built-in configs only if it has this file, so that an unrelated
# ``site-packages/configs`` beside an installed libai is never mistaken for ours.
_MARKER = os.path.join("common", "train.py")


def _candidates(package_dir: str) -> List[str]:
    return [
        os.path.normpath(os.path.join(package_dir, os.pardir, "configs")),
        os.path.normpath(os.path.join(package_dir, "config", "configs")),
    ]


def find_configs_root(package_dir: Optional[str] = None) -> str:
    """The folder holding the built-in configs.

    Args:
        package_dir: the ``libai`` package folder; defaults to the imported package's. Tests pass
            a fake installation here.

    Raises:
        ConfigError: neither place exists, naming both and how to fix the installation.
    """
    if package_dir is None:
        import libai

        package_dir = os.path.dirname(os.path.abspath(libai.__file__))
    candidates = _candidates(package_dir)
    for candidate in candidates:
        if os.path.isfile(os.path.join(candidate, _MARKER)):
            return candidate
    raise ConfigError(
        "Cannot find libai's built-in configs: looked for "
        + " and ".join(f"'{c}'" for c in candidates)
        + ". Install libai from its repository with 'pip install -e .' (or 'pip install .', "
        "which copies configs/ into the package)."
    )


def list_configs(root: str) -> List[str]:
    """Every config file under ``root``, as sorted ``/``-separated paths relative to it."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in files:
            if name.endswith(CONFIG_SUFFIXES) and name != "__init__.py":
                relative = os.path.relpath(os.path.join(folder, name), root)
                found.append(relative.replace(os.sep, "/"))
    return sorted(found)
