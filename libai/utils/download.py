"""``download``: LiBai's helper for fetching a file once, in a library that never downloads.

libai runs on machines without internet access and keeps every run reproducible from local
files, so this function only ever *finds* files: when ``dir/filename`` already exists it is
returned (as LiBai's ``download`` does for a file it fetched before); otherwise a
:class:`FileNotFoundError` says which URL the file comes from and where to put it. Code written
for LiBai that calls ``download(url, dir)`` therefore keeps working wherever its files have been
placed by hand, and a run never stalls on a network it does not have.
"""
import hashlib
import logging
import os
from typing import Optional

__all__ = ["download", "check_digest", "file_digest", "sha256_of"]

logger = logging.getLogger(__name__)


def file_digest(path: str, algorithm: str = "sha256", chunk_size: int = 1 << 20) -> str:
    """Hex digest (``hashlib`` algorithm name) of the file at ``path``, read in chunks (model
    files can be large)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_of(path: str) -> str:
    """Hex SHA-256 of the file at ``path``."""
    return file_digest(path, "sha256")


def check_digest(path: str, expected: str, algorithm: str, url: str) -> None:
    """Raise :class:`ValueError` when the file at ``path`` does not have the ``expected`` digest:
    it is then not the file ``url`` serves (truncated, or another version)."""
    actual = file_digest(path, algorithm)
    if actual != expected.lower():
        name = {"sha256": "SHA-256", "md5": "MD5"}.get(algorithm, algorithm)
        raise ValueError(
            f"{path} has {name} {actual}, expected {expected.lower()}; the file is not "
            f"the one {url} serves (truncated or replaced). Fetch it again and place it at {path}"
        )


def download(
    url: str,
    dir: str,
    *,
    filename: Optional[str] = None,
    progress: bool = True,
    sha256: Optional[str] = None,
) -> str:
    """The path of ``filename`` inside ``dir``, which must already hold it.

    Args:
        url: where the file can be obtained (named in the error when it is missing).
        dir: the directory the file is expected in.
        filename: its name there; defaults to the URL's last ``/``-separated part, the name
            LiBai would have saved it under.
        progress: accepted for LiBai's signature; nothing is transferred.
        sha256: optional hex digest the file must have (an addition to LiBai's signature, to
            catch a truncated or wrong file placed by hand).

    Raises:
        ValueError: the URL has no file name and none was given, or the file's SHA-256 differs.
        FileNotFoundError: the file is not there; the message names the URL and the path.
    """
    if filename is None:
        filename = url.split("/")[-1]
        if not filename:
            raise ValueError(f"cannot tell a file name from the URL {url!r}; pass filename=")
    path = os.path.join(dir, filename)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{path} does not exist and libai does not download files at run time. Fetch {url} "
            f"on a machine with internet access and place it at {path}"
        )
    if sha256 is not None:
        check_digest(path, sha256, "sha256", url)
    logger.info(f"Using {path} (already present; libai never downloads)")
    return path
