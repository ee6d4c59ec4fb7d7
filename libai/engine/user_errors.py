"""A user's mistake ends with its message; a bug ends with its traceback. The one place that
decides which.

A missing vocabulary used to end a run with two chained tracebacks of 40 lines, the message
(which names the file and the fix) buried in the middle. libai's errors about the user's input
already say what is wrong and how to fix it; the traceback only adds libai's internals. So the
command line (:func:`libai.engine.cli.launch_main`) asks :func:`is_user_error` about whatever
ended the run: a user error is printed once, as ``Type: message``, with exit status 1; anything
else keeps Python's full traceback, since that is what a bug report needs. ``LIBAI_FULL_ERROR=1``
in the environment shows the traceback of user errors too (as hydra's ``HYDRA_FULL_ERROR``).

What counts as the user's (the *root cause* is the innermost ``raise ... from`` of the chain):

* any config error (:class:`~libai.config.errors.ConfigError`: a bad key, override or config
  file) in the chain, other than the wrapper that only says which node failed to build;
* a missing, unreadable or wrong-kind path (``FileNotFoundError``, ``IsADirectoryError``,
  ``NotADirectoryError``, ``PermissionError``) that is not a file of libai itself;
* an exception libai raises *on purpose*, by a ``raise`` statement in libai's own source, of a
  kind used for bad input: ``ValueError``, ``TypeError``, ``LookupError``, ``OSError`` or a
  class libai defines (``CheckpointError``, ``InputCheckError``...). libai's rule is that such
  a message names the problem and its fix.

An error raised by OneFlow, NumPy or Python itself inside libai (``None + 1``), a plain
``RuntimeError``/``AssertionError``/``NotImplementedError``, and anything raised by a project's
own code stay bugs: their traceback is printed.
"""
import ast
import functools
import logging
import os
import sys
from typing import List, Optional

from libai.config.errors import ConfigError, InstantiationError

__all__ = ["FULL_ERROR_ENV", "full_error_requested", "is_user_error", "print_user_error", "root_cause"]

FULL_ERROR_ENV = "LIBAI_FULL_ERROR"
_LIBAI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PATH_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
_INPUT_ERRORS = (ValueError, TypeError, LookupError, OSError)
_BUG_KINDS = (AssertionError, NotImplementedError)


def full_error_requested() -> bool:
    """``LIBAI_FULL_ERROR`` is set to something other than empty, 0, false or no."""
    return os.environ.get(FULL_ERROR_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _chain(error: BaseException) -> List[BaseException]:
    """``error`` and its explicit causes (``raise ... from``), outermost first."""
    chain = [error]
    while chain[-1].__cause__ is not None and chain[-1].__cause__ not in chain:
        chain.append(chain[-1].__cause__)
    return chain


def root_cause(error: BaseException) -> BaseException:
    """The innermost exception of ``error``'s ``raise ... from`` chain."""
    return _chain(error)[-1]


def _in_libai(path: str) -> bool:
    return os.path.abspath(path).startswith(_LIBAI_DIR + os.sep)


@functools.lru_cache(maxsize=64)
def _raise_names(filename: str) -> dict:
    """``{line: name raised}`` for every ``raise`` statement of a source file (every line the
    statement spans; name ``""`` when the raised expression is not a class name)."""
    try:
        with open(filename, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return {}
    lines = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = exc.id if isinstance(exc, ast.Name) else exc.attr if isinstance(exc, ast.Attribute) else ""
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                lines[line] = name
    return lines


def _raised_on_purpose_by_libai(error: BaseException) -> bool:
    """The innermost frame of ``error`` is a ``raise`` statement in libai's source that names
    ``error``'s class (or re-raises a caught exception held in a variable)."""
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = tb.tb_frame.f_code.co_filename
    if not _in_libai(filename):
        return False
    name = _raise_names(filename).get(tb.tb_lineno)
    if name is None:
        return False
    return not name[:1].isupper() or name in {cls.__name__ for cls in type(error).__mro__}


def is_user_error(error: BaseException) -> bool:
    """Whether ``error`` is a mistake in the user's config, files or values (printed as its
    message) rather than a bug (printed with its traceback); see the module docstring."""
    chain = _chain(error)
    if any(isinstance(e, ConfigError) and not isinstance(e, InstantiationError) for e in chain):
        return True
    root = chain[-1]
    if isinstance(root, _BUG_KINDS):
        return False
    if isinstance(root, _PATH_ERRORS) and root.filename is not None:
        return not _in_libai(str(root.filename))
    if not _raised_on_purpose_by_libai(root):
        return False
    own_class = type(root).__module__.split(".")[0] == "libai"
    return isinstance(root, _INPUT_ERRORS) or (own_class and type(root) is not RuntimeError)


def _message(error: BaseException) -> str:
    text = error.args[0] if isinstance(error, KeyError) and len(error.args) == 1 else error
    return f"{type(error).__name__}: {text}"


def print_user_error(error: BaseException, rank: Optional[int] = None) -> None:
    """Print ``error`` the way a user error ends a run: its message once on stderr (the
    outermost one: it names the config node and includes the cause's message), how to see the
    traceback, and the same in the run's ``log.txt``."""
    text = _message(error)
    if rank is not None:
        text = f"[rank {rank}] {text}"
    hint = f"(A mistake in the config, its files or values: no traceback. Set {FULL_ERROR_ENV}=1 to see it.)"
    record = logging.LogRecord("libai", logging.ERROR, __file__, 0, text, None, None)
    for handler in logging.getLogger("libai").handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
    sys.stdout.flush()
    print(f"{text}\n{hint}", file=sys.stderr, flush=True)
