"""PathManager (LiBai's path, backed by iopath) and the offline ``download``."""
import os

import pytest

from libai.utils import file_io
from libai.utils.download import download, sha256_of


def test_path_manager_round_trip(tmp_path):
    pm = file_io.PathManager
    target = tmp_path / "a" / "b"
    pm.mkdirs(str(target))
    with pm.open(str(target / "x.txt"), "w") as f:
        f.write("hello")
    assert pm.exists(str(target / "x.txt")) and pm.isfile(str(target / "x.txt"))
    assert pm.ls(str(target)) == ["x.txt"]
    assert pm.copy(str(target / "x.txt"), str(target / "y.txt"))
    with pm.open(str(target / "y.txt")) as f:
        assert f.read() == "hello"
    pm.rm(str(target / "y.txt"))
    assert not pm.exists(str(target / "y.txt"))


def test_names_are_iopaths():
    from iopath.common.file_io import PathManager as IoPathManager, g_pathmgr

    assert file_io.PathManager is g_pathmgr is file_io.g_pathmgr
    assert file_io.PathManagerBase is IoPathManager
    assert isinstance(file_io.PathManagerBase(), IoPathManager)


def test_lazy_path_is_computed_once_on_use():
    calls = []
    lazy = file_io.LazyPath(lambda: calls.append(1) or "/tmp/x")
    assert calls == []
    assert os.fspath(lazy) == "/tmp/x" and os.fspath(lazy) == "/tmp/x"
    assert calls == [1]


def test_download_returns_a_file_already_there(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    assert download("https://example.invalid/x/vocab.txt", str(tmp_path)) == str(tmp_path / "vocab.txt")
    assert download("https://example.invalid/x/other", str(tmp_path), filename="vocab.txt") == str(
        tmp_path / "vocab.txt"
    )


def test_download_refuses_to_fetch_and_says_where_to_put_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"does not download.*Fetch https://example.invalid/m.bin.*place it at .*m\.bin"):
        download("https://example.invalid/m.bin", str(tmp_path))
    assert not (tmp_path / "m.bin").exists()
    with pytest.raises(ValueError, match="cannot tell a file name"):
        download("https://example.invalid/", str(tmp_path))


def test_download_checks_a_given_sha256(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"abc")
    # SHA-256 of b"abc" from FIPS 180-2, appendix B.1.
    good = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256_of(str(tmp_path / "w.bin")) == good
    assert download("https://example.invalid/w.bin", str(tmp_path), sha256=good.upper()) == str(tmp_path / "w.bin")
    with pytest.raises(ValueError, match=r"w\.bin has SHA-256 ba7816bf.*expected 0{64}.*Fetch it again"):
        download("https://example.invalid/w.bin", str(tmp_path), sha256="0" * 64)


def test_download_names_the_file_as_libai_saves_it(tmp_path):
    # LiBai keeps everything after the last "/", query string included.
    (tmp_path / "m.bin?v=2").write_bytes(b"x")
    assert download("https://example.invalid/m.bin?v=2", str(tmp_path)) == str(tmp_path / "m.bin?v=2")


def test_get_data_from_cache_finds_the_file_where_libai_caches_it(tmp_path):
    from libai.utils import file_utils

    cache = tmp_path / "cache"
    url = "https://example.invalid/models/bert/vocab.txt"
    with pytest.raises(FileNotFoundError, match=r"Fetch https://example.invalid/models/bert/vocab.txt.*"
                                               r"place it at .*cache/vocab\.txt"):
        file_utils.get_data_from_cache(url, str(cache))
    assert cache.is_dir()  # created, as LiBai does, ready for the file
    (cache / "vocab.txt").write_bytes(b"abc")
    md5_abc = "900150983cd24fb0d6963f7d28e17f72"  # RFC 1321, appendix A.5
    assert file_utils.get_md5(str(cache / "vocab.txt")) == md5_abc
    assert file_utils.get_data_from_cache(url, cache, md5=md5_abc) == str(cache / "vocab.txt")
    with pytest.raises(ValueError, match=r"has MD5 900150983cd24fb0d6963f7d28e17f72, expected f{32}"):
        file_utils.get_data_from_cache(url, str(cache), md5="f" * 32)
    assert file_utils.download_file(str(cache / "vocab.txt"), url) == str(cache / "vocab.txt")
    with pytest.raises(FileNotFoundError, match=r"place it at .*cache/other\.bin"):
        file_utils.download_file(str(cache / "other.bin"), url)


def test_the_default_cache_is_libais(tmp_path):
    import subprocess
    import sys

    code = "from libai.utils.file_utils import default_cache_path as p; print(p)"
    env = dict(os.environ, OF_CACHE_ROOT=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == os.path.join(str(tmp_path), "libai")
