"""PathManager (LiBai's path, backed by iopath) and the offline ``download``."""
import os

import pytest

from libai.utils import file_io
from libai.utils.download import download


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
