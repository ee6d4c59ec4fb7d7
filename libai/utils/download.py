"""``download``: LiBai's helper for fetching a file once, in a library that never downloads.

libai runs on machines without internet access and keeps every run reproducible from local
files, so this function only ever *finds* files: when ``dir/filename`` already exists it is
returned (as LiBai's ``download`` does for a cached file); otherwise a :class:`FileNotFoundError`
says which URL the file comes from and where to put it. Code written for LiBai that calls
``download(url, dir)`` therefore keeps working wherever its files have been placed by hand.
"""
import logging
import os
from typing import Optional
from urllib.parse import urlparse

__all__ = ["download"]

logger = logging.getLogger(__name__)


def download(url: str, dir: str, *, filename: Optional[str] = None, progress: bool = True) -> str:
    """The path of ``filename`` (default: the URL's last component) inside ``dir``.

    Args:
        url: where the file can be obtained (named in the error when it is missing).
        dir: the directory the file is expected in.
        filename: its name there; defaults to the last part of ``url``.
        progress: accepted for LiBai's signature; nothing is transferred.

    Raises:
        ValueError: the URL has no file name and none was given.
        FileNotFoundError: the file is not there; the message names the URL and the path.
    """
    if filename is None:
        filename = os.path.basename(urlparse(url).path)
        if not filename:
            raise ValueError(f"cannot tell a file name from the URL {url!r}; pass filename=")
    path = os.path.join(dir, filename)
    if os.path.isfile(path):
        logger.info(f"Using {path} (already present; libai never downloads)")
        return path
    raise FileNotFoundError(
        f"{path} does not exist and libai does not download files at run time. Fetch {url} "
        f"on a machine with internet access and place it at {path}"
    )
