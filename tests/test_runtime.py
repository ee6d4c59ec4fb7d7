"""libai/_runtime.py: what happens before ``import oneflow``.

The LOCAL_RANK rule is checked on plain dicts here; the real consequence (two launchers on one
machine train and match one process) is tests/parallel/test_parallel_training.py's two-node test.
"""
import os
import socket
import sys
import threading
import time

import pytest

from libai._runtime import align_local_rank, preload_cuda_libraries, wait_for_rank0
from libai.utils.testing import free_port


def _env(master="127.0.0.1", rank="1", local_rank="0", world_size="2"):
    return {"MASTER_ADDR": master, "RANK": rank, "LOCAL_RANK": local_rank, "WORLD_SIZE": world_size}


@pytest.mark.parametrize("master", ["127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1", "[::1]"])
def test_nodes_on_one_machine_get_their_global_rank_as_local_rank(master):
    env = _env(master=master, rank="3", local_rank="1", world_size="4")
    assert align_local_rank(env) == "3"
    assert env["LOCAL_RANK"] == "3"


@pytest.mark.parametrize(
    "env",
    [
        _env(master="10.0.0.1"),  # several real machines: the launcher's local rank is right
        _env(master="node-0.cluster"),
        _env(rank="1", local_rank="1"),  # one launcher with several processes
        _env(world_size="1", rank="0", local_rank="0"),
        {"MASTER_ADDR": "127.0.0.1", "WORLD_SIZE": "2", "RANK": "1"},  # no LOCAL_RANK
        {},  # not launched at all
    ],
    ids=["remote-master", "remote-hostname", "one-launcher", "one-process", "no-local-rank", "plain"],
)
def test_other_launches_are_left_alone(env):
    before = dict(env)
    assert align_local_rank(env) is None
    assert env == before


def test_too_late_once_oneflow_is_imported_says_so_and_changes_nothing(monkeypatch):
    import oneflow  # noqa: F401  (already imported by the suite; the point is that it is)

    for key, value in _env().items():
        monkeypatch.setenv(key, value)
    with pytest.warns(RuntimeWarning, match="Import libai before oneflow"):
        assert align_local_rank() is None
    assert os.environ["LOCAL_RANK"] == "0"


def test_cuda_libraries_are_preloaded_once_oneflow_is_importable():
    # The suite imported libai before oneflow, so the preload ran and found the wheel's
    # companions; a second call returns the same list without loading anything again.
    assert "oneflow" in sys.modules
    first = preload_cuda_libraries()
    assert first == preload_cuda_libraries()
    assert any("cudnn" in path for path in first)


def test_oneflow_uses_the_preloaded_copies_which_stay_out_of_the_global_scope():
    """OneFlow's cuBLAS/cuDNN dependencies were satisfied by the preloaded files (one copy of
    each in the process, the wheel's), while their symbols stay out of the global scope that
    every relocation of OneFlow's libraries would otherwise search."""
    import ctypes

    import oneflow  # noqa: F401

    with open("/proc/self/maps") as f:
        mapped = {line.split()[-1] for line in f if "/" in line}
    for name in ("libcublas.so.11", "libcudnn_cnn_infer.so.8"):
        copies = [path for path in mapped if os.path.basename(path) == name]
        assert len(copies) == 1 and copies[0] in preload_cuda_libraries(), copies
    with pytest.raises(AttributeError):
        ctypes.CDLL(None).cublasCreate_v2


def _rank1_env(port):
    return {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


def test_a_later_rank_waits_until_rank0_listens_then_goes_on():
    port = free_port()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def listen_later():
        time.sleep(0.5)
        server.bind(("127.0.0.1", port))
        server.listen()

    thread = threading.Thread(target=listen_later)
    thread.start()
    try:
        waited = wait_for_rank0(_rank1_env(port), timeout=10.0)
    finally:
        thread.join()
        server.close()
    assert 0.4 <= waited < 5.0


def test_waiting_gives_up_after_the_timeout_when_nobody_listens():
    waited = wait_for_rank0(_rank1_env(free_port()), timeout=0.3)
    assert 0.3 <= waited < 2.0


@pytest.mark.parametrize("env", [
    {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"},
    {"RANK": "1", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"},
    {"RANK": "1", "WORLD_SIZE": "2"},
    {},
], ids=["rank0", "one-process", "no-master", "not-launched"])
def test_rank0_and_unlaunched_processes_do_not_wait(env):
    assert wait_for_rank0(env, timeout=5.0) == 0.0
