"""Exceptions raised by the config system.

Each one carries the facts a user needs to fix the problem (the key path, the file and line,
the target) in its message, so a failing run can be corrected without reading our code. They
all derive from :class:`ConfigError`, so a tool can catch every config mistake in one place.
"""
from typing import List, Optional, Sequence, Tuple


class ConfigError(Exception):
    """Base class of every error about a config's content or files."""


class ConfigKeyError(ConfigError, KeyError):
    """A key path that the config does not have.

    Derives from ``KeyError`` so code that treats a missing key as a lookup failure keeps working,
    but prints its message plainly (``KeyError`` alone would print the repr of the message).
    """

    def __init__(self, message: str, key: str = "", suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.key = key
        self.suggestions = list(suggestions)

    def __str__(self) -> str:
        return str(self.args[0])


class OverrideError(ConfigError, ValueError):
    """A command-line override that is malformed or names a key it may not touch."""


class OverrideKeyError(OverrideError, ConfigKeyError):
    """An override whose key path is not in the config (a typo, or a path through a value
    that is not a dict or list).

    Also a ``KeyError``, as code written for LiBai expects of a bad override key; the message
    names the closest existing paths.
    """


class InstantiationError(ConfigError):
    """Building a config node failed; the message names the key path and the target.

    The original exception is chained as ``__cause__``.
    """

    def __init__(self, message: str, path: str = "", target: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.target = target


class ConfigLoadError(ConfigError):
    """A config file could not be read or executed.

    ``path`` and ``lineno`` point at the failing line (``lineno`` is ``None`` when the failure is
    not tied to one line). When the failing file was imported by other config files, the chain of
    importers is listed after the main message, innermost first.
    """

    def __init__(self, path: str, lineno: Optional[int], reason: str) -> None:
        super().__init__(path, lineno, reason)
        self.path = path
        self.lineno = lineno
        self.reason = reason
        self.imported_from: List[Tuple[str, Optional[int]]] = []

    def add_importer(self, path: str, lineno: Optional[int]) -> None:
        """Record that the failing file was imported from ``path`` at ``lineno``."""
        self.imported_from.append((path, lineno))

    def __str__(self) -> str:
        where = f"'{self.path}'" + (f", line {self.lineno}" if self.lineno else "")
        lines = [f"Failed to load config file {where}: {self.reason}"]
        for path, lineno in self.imported_from:
            suffix = f", line {lineno}" if lineno else ""
            lines.append(f"  imported from '{path}'{suffix}")
        return "\n".join(lines)
