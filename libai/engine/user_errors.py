"""Telling a user's mistake from a bug in libai, so that each ends a run the way it should.

A missing file, a bad key or a wrong value is the user's to fix: the run ends with the message
alone (it names the problem and the fix), not with two chained tracebacks of forty lines that
bury it. A bug inside libai (or OneFlow) still shows its traceback, and ``LIBAI_FULL_ERROR=1``
(like hydra's ``HYDRA_FULL_ERROR``) shows it for every error.

The decision looks at the *root* of the exception chain, because libai wraps what went wrong
while building a config node in an :class:`~libai.config.errors.InstantiationError`: a bug in a
model's constructor arrives wrapped the same way as a vocabulary file that is not there.
"""
import os
from typing import Iterator, Optional

from libai.config.errors import ConfigError
from libai.utils.checkpoint_files import CheckpointError

__all__ = ["FULL_ERROR_ENV", "is_user_error", "user_error_message"]

FULL_ERROR_ENV = "LIBAI_FULL_ERROR"
_LIBAI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Always the user's: the config system's own errors, checkpoints that are not there or corrupt,
# paths the user gave that do not exist or cannot be read.
_USER_KINDS = (ConfigError, CheckpointError, FileNotFoundError, IsADirectoryError,
               NotADirectoryError, PermissionError)
# The user's when libai raised them on purpose (their message says what to change).
_CHECKED_KINDS = (ValueError, KeyError)


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)


def _raised_in_libai(error: BaseException) -> bool:
    tb = error.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and os.path.abspath(last.tb_frame.f_code.co_filename).startswith(_LIBAI_DIR + os.sep)


def is_user_error(error: BaseException) -> bool:
    """Whether ``error`` is a mistake in the user's config, data or command line."""
    root = list(_chain(error))[-1]
    if isinstance(root, _USER_KINDS):
        return True
    return isinstance(root, _CHECKED_KINDS) and _raised_in_libai(root)


def user_error_message(error: BaseException) -> Optional[str]:
    """The text to end the run with, or None when the traceback should be shown (a bug, or
    ``LIBAI_FULL_ERROR=1``)."""
    if os.environ.get(FULL_ERROR_ENV, "").strip() not in ("", "0") or not is_user_error(error):
        return None
    root = list(_chain(error))[-1]
    text = str(error)
    if str(root) and str(root) not in text:  # the wrapper does not already quote its cause
        text += f"\n  caused by {type(root).__name__}: {root}"
    head = "" if text.lower().startswith("error") else "Error: "
    return (f"{head}{text}\n(A problem in the config, the data or the command line, not in libai: "
            f"{FULL_ERROR_ENV}=1 shows the full traceback.)")
