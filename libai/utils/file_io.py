"""``PathManager``: one way to open, list and copy paths, local or behind a registered handler.

The implementation is the maintained ``iopath`` package (the library LiBai's and detectron2's
path managers come from); this module gives it LiBai's import path and names, so
``from libai.utils.file_io import PathManager`` works as it does in LiBai:

- ``PathManager`` / ``g_pathmgr``: the process-wide manager (local files out of the box;
  ``PathManager.register_handler`` adds others, e.g. an object store).
- ``PathManagerBase``: the manager class, for a private instance with its own handlers.
- ``PathManagerFactory``: named managers shared across a program.
- ``LazyPath``: a path computed only when first used.

libai itself never fetches remote files (see :mod:`libai.utils.download`); ``HTTPURLHandler``
is therefore not registered.
"""
from iopath.common.file_io import (
    LazyPath,
    NativePathHandler,
    PathHandler,
    PathManager as PathManagerBase,
    PathManagerFactory,
    g_pathmgr,
)

__all__ = [
    "LazyPath",
    "NativePathHandler",
    "PathHandler",
    "PathManager",
    "PathManagerBase",
    "PathManagerFactory",
    "g_pathmgr",
]

#: The process-wide path manager (LiBai's name for it).
PathManager = g_pathmgr
