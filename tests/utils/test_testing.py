"""libai/utils/testing.py: helpers for tests that launch several processes."""
from types import SimpleNamespace

import pytest

from libai.engine.trainer import EagerTrainer, GraphTrainer
from libai.utils.testing import COMPILED_GRAPH, rank_records, runner_description, tagged_lines


def test_tagged_lines_separates_records_that_two_ranks_interleaved():
    shared_pipe = "noise\nRESULT rank=1 ok=TrueRESULT rank=0 ok=True\n\nmore noise\nRESULT rank=2 ok=False\n"
    assert tagged_lines(shared_pipe) == ["RESULT rank=0 ok=True", "RESULT rank=1 ok=True",
                                         "RESULT rank=2 ok=False"]
    assert tagged_lines("nothing here") == []


def test_rank_records_need_one_record_from_every_rank():
    two = "RESULT rank=1 runner=GraphTrainer(compiled=True) loss=0.5RESULT rank=0 runner=EagerTrainer loss=0.5\n"
    assert rank_records(two, 2) == {0: {"rank": "0", "runner": "EagerTrainer", "loss": "0.5"},
                                    1: {"rank": "1", "runner": "GraphTrainer(compiled=True)", "loss": "0.5"}}
    assert tagged_lines(two, ranks=2) == sorted(tagged_lines(two))
    with pytest.raises(AssertionError, match=r"ranks 0\.\.1; missing from \[1\], repeated by \[\]"):
        rank_records("RESULT rank=0 loss=0.5\nTraceback: rank 1 died", 2)
    with pytest.raises(AssertionError, match=r"ranks 0\.\.1; missing from \[1\]"):
        tagged_lines("RESULT rank=0 loss=0.5\n", ranks=2)
    with pytest.raises(AssertionError, match=r"missing from \[\], repeated by \[0\]"):
        rank_records("RESULT rank=0 a=1\nRESULT rank=0 a=2\nRESULT rank=1 a=1\n", 2)
    with pytest.raises(AssertionError, match="a RESULT record without rank=<number>: 'RESULT ok=True'"):
        rank_records("RESULT ok=True\n", 1)
    with pytest.raises(AssertionError, match=r"from unknown ranks \[2\]"):
        rank_records("RESULT rank=0\nRESULT rank=1\nRESULT rank=2\n", 2)


def test_runner_description_tells_a_compiled_graph_from_eager_steps():
    class FakeGraph:
        is_compiled = True

    graph_runner = GraphTrainer.__new__(GraphTrainer)
    graph_runner.graph = FakeGraph()
    eager_runner = EagerTrainer.__new__(EagerTrainer)
    assert runner_description(SimpleNamespace(_trainer=graph_runner)) == COMPILED_GRAPH
    assert runner_description(SimpleNamespace(_trainer=eager_runner)) == "EagerTrainer"
    FakeGraph.is_compiled = False
    assert runner_description(graph_runner) == "GraphTrainer(compiled=False)"


def test_free_port_is_bindable_and_below_the_range_outgoing_connections_use(tmp_path):
    import socket

    from libai.utils.testing import _ephemeral_low, free_port

    low = _ephemeral_low()
    ports = {free_port() for _ in range(20)}
    assert all(1024 <= p < low for p in ports) and len(ports) > 1
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))  # still free
    (tmp_path / "range").write_text("40000\t50000\n")
    assert _ephemeral_low(str(tmp_path / "range")) == 40000
    assert _ephemeral_low(str(tmp_path / "missing")) == 32768
