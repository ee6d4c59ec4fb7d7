"""LiBai's ``libai.utils.file_utils``: the local cache of files named by URL, offline.

LiBai's tests and projects call ``get_data_from_cache(url, cache_dir, md5=...)`` to fetch a
pretrained model or vocabulary once into a cache directory. libai never downloads (runs must be
reproducible from local files, on machines without internet), so these functions *find* the
file where LiBai would have cached it — ``cache_dir/<last part of the URL>`` — check it, and
otherwise say which URL to fetch and where to place it (see :mod:`libai.utils.download`).

The default cache directory is LiBai's: ``$OF_CACHE_ROOT/libai``, ``~/.of_cache/libai`` when
``OF_CACHE_ROOT`` is unset.
"""
import logging
import os
from pathlib import Path
from typing import Optional, Union

from libai.utils.download import check_digest, download, file_digest

__all__ = ["cache_home", "default_cache_path", "download_file", "get_data_from_cache", "get_md5"]

logger = logging.getLogger(__name__)

#: LiBai's cache root and its default cache directory (read once, at import, as LiBai does).
cache_home = Path(os.getenv("OF_CACHE_ROOT", Path.home() / ".of_cache"))
default_cache_path = str(cache_home / "libai")


def get_md5(fname: str) -> str:
    """Hex MD5 of a file (the checksum LiBai publishes for its cached files)."""
    return file_digest(fname, "md5")


def download_file(out_path: str, url: str) -> str:
    """LiBai's ``download_file(out_path, url)``: ``out_path`` when it exists, else a
    :class:`FileNotFoundError` naming ``url`` and ``out_path`` (nothing is downloaded)."""
    return download(url, os.path.dirname(out_path) or ".", filename=os.path.basename(out_path))


def get_data_from_cache(
    url: str,
    cache_dir: Optional[Union[str, Path]] = None,
    force_download: bool = False,
    md5: Optional[str] = None,
) -> str:
    """The cached copy of ``url``: ``cache_dir/<last part of the URL>`` (``cache_dir`` defaults
    to :data:`default_cache_path`; it is created, as LiBai does, so the file can be put there).

    Args:
        md5: when given, the file must have this MD5 (LiBai would fetch it again; here a
            :class:`ValueError` says so).
        force_download: LiBai's flag to fetch again; nothing is fetched here, so it only logs
            that the cached file is used.

    Raises:
        FileNotFoundError: the file is not in the cache; the message names the URL and path.
    """
    cache_dir = default_cache_path if cache_dir is None else str(cache_dir)
    os.makedirs(cache_dir, exist_ok=True)
    path = download(url, cache_dir)
    if force_download:
        logger.warning(f"force_download=True: libai never downloads; using the cached {path}")
    if md5 is not None:
        check_digest(path, md5, "md5", url)
    return path
