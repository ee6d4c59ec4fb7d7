"""EventStorage and HistoryBuffer: histories, smoothing, lazy tensor reads, the storage stack,
checkpoints, global tensors in two processes. (The writers that read the storage:
test_writers.py.)"""
import json
import random
import statistics

import numpy as np
import oneflow as flow
import pytest

from libai.utils import events
from libai.utils.events import EventStorage, get_event_storage, reset_event_storages
from libai.utils.history import HistoryBuffer


@pytest.fixture(autouse=True)
def _clean_storages():
    reset_event_storages()
    yield
    reset_event_storages()


class FakeDeviceScalar:
    """Stands in for a device tensor: counts detach() and item() (the device sync)."""

    is_global = False
    is_lazy = False

    def __init__(self, value):
        self.value = value
        self.item_calls = 0
        self.detach_calls = 0

    def numel(self):
        return 1

    def detach(self):
        self.detach_calls += 1
        return self

    def item(self):
        self.item_calls += 1
        return self.value


# ------------------------------------------------------------------------------- HistoryBuffer
def test_history_statistics_match_independent_computation():
    rng = random.Random(0)
    values = [rng.uniform(-5, 5) for _ in range(37)]
    buf = HistoryBuffer(max_length=10)
    for i, v in enumerate(values):
        buf.update(v, i)
    assert buf.latest() == values[-1]
    assert buf.latest_iter() == 36
    assert len(buf) == 10
    assert buf.median(7) == pytest.approx(statistics.median(values[-7:]))
    assert buf.median(4) == pytest.approx(statistics.median(values[-4:]))
    assert buf.avg(5) == pytest.approx(sum(values[-5:]) / 5)
    assert buf.avg(100) == pytest.approx(sum(values[-10:]) / 10)  # window capped at what is kept
    assert buf.global_avg() == pytest.approx(sum(values) / len(values))  # includes evicted values
    assert buf.values() == [(v, i) for i, v in enumerate(values)][-10:]


def test_history_empty_and_bad_window_errors():
    buf = HistoryBuffer()
    with pytest.raises(IndexError, match="empty history"):
        buf.latest()
    buf.update(1.0, 0)
    with pytest.raises(ValueError, match="window must be >= 1"):
        buf.median(0)
    with pytest.raises(ValueError, match="max_length must be >= 1"):
        HistoryBuffer(0)


def test_history_converts_tensors_once_and_only_when_read():
    fakes = [FakeDeviceScalar(float(i)) for i in range(4)]
    buf = HistoryBuffer(max_length=3)
    for i, fake in enumerate(fakes[:3]):
        buf.update(fake, i)
    assert [f.item_calls for f in fakes] == [0, 0, 0, 0]
    assert buf.avg(3) == pytest.approx(1.0)
    assert buf.median(3) == 1.0 and buf.global_avg() == pytest.approx(1.0)
    assert [f.item_calls for f in fakes[:3]] == [1, 1, 1]  # converted once, then floats
    buf.update(fakes[3], 3)  # evicts an already converted entry: no new read
    assert [f.item_calls for f in fakes] == [1, 1, 1, 0]
    assert buf.global_avg() == pytest.approx(1.5)


def test_history_eviction_of_unread_tensor_still_counts_it():
    fakes = [FakeDeviceScalar(float(v)) for v in (10, 20, 30)]
    buf = HistoryBuffer(max_length=2)
    for i, fake in enumerate(fakes):
        buf.update(fake, i)
    assert fakes[0].item_calls == 1  # forced out of the window, so read to keep global_avg exact
    assert buf.global_avg() == pytest.approx(20.0)
    assert buf.values() == [(20.0, 1), (30.0, 2)]


# ------------------------------------------------------------------------------- EventStorage
def test_put_is_lazy_and_detaches_tensors():
    fake = FakeDeviceScalar(2.5)
    with EventStorage(start_iter=7) as storage:
        storage.put_scalar("loss", fake)
        assert fake.detach_calls == 1 and fake.item_calls == 0
        assert storage.latest() == {"loss": (2.5, 7)}
        assert fake.item_calls == 1
        storage.latest()
        assert fake.item_calls == 1


def test_real_oneflow_tensors_and_numpy_scalars():
    x = flow.tensor(3.0, requires_grad=True)
    with EventStorage() as storage:
        storage.put_scalars(a=x * 2, b=np.float32(0.5), c=np.array([4.0]), d=7)
        latest = storage.latest()
    assert latest == {"a": (6.0, 0), "b": (0.5, 0), "c": (4.0, 0), "d": (7.0, 0)}
    assert all(isinstance(v, float) for v, _ in latest.values())


def test_bad_values_are_rejected_with_a_fix():
    with EventStorage() as storage:
        with pytest.raises(TypeError, match="takes a number"):
            storage.put_scalar("x", "1.0")
        with pytest.raises(ValueError, match=r"shape \(2,\); reduce it first"):
            storage.put_scalar("x", flow.tensor([1.0, 2.0]))
        with pytest.raises(ValueError, match="non-empty string name"):
            storage.put_scalar("", 1.0)
        storage.put_scalar("x", 1.0)
        with pytest.raises(ValueError, match="smoothing_hint=True before"):
            storage.put_scalar("x", 1.0, smoothing_hint=False)
        with pytest.raises(KeyError, match="known scalars: x"):
            storage.history("nope")


def test_global_tensors_must_be_readable_on_this_rank():
    placement = flow.placement("cpu", ranks=[0])
    with EventStorage() as storage:
        ok = flow.tensor(1.5).to_global(placement=placement, sbp=flow.sbp.broadcast)
        storage.put_scalar("ok", ok)
        assert storage.history("ok").latest() == 1.5
        split = flow.tensor([1.5]).to_global(placement=placement, sbp=flow.sbp.split(0))
        with pytest.raises(ValueError, match=r"distributed.ttol\(tensor\)"):
            storage.put_scalar("split", split)


def test_iteration_step_and_cur_iter():
    with EventStorage(start_iter=3) as storage:
        storage.put_scalar("a", 1.0)
        storage.step()
        storage.put_scalar("a", 2.0)
        storage.iter = 10
        assert storage.iteration == 10
        storage.put_scalar("acc", 0.5, smoothing_hint=False, cur_iter=8)
        assert storage.history("a").values() == [(1.0, 3), (2.0, 4)]
        assert storage.latest()["acc"] == (0.5, 8)


def test_latest_with_smoothing_hint_uses_window_median():
    losses = [4.0, 1.0, 9.0, 2.0, 8.0, 3.0]
    with EventStorage() as storage:
        for i, loss in enumerate(losses):
            storage.iter = i
            storage.put_scalar("loss", loss)
            storage.put_scalar("lr", 0.1 * (i + 1), smoothing_hint=False)
        smoothed = storage.latest_with_smoothing_hint(window_size=4)
    assert smoothed["loss"] == (statistics.median(losses[-4:]), 5)
    assert smoothed["lr"] == (pytest.approx(0.6), 5)


def test_storage_stack_nesting_reset_and_error_outside():
    with pytest.raises(RuntimeError, match=r"outside any EventStorage.*with EventStorage"):
        get_event_storage()
    with EventStorage() as outer:
        assert get_event_storage() is outer
        with EventStorage() as inner:
            assert get_event_storage() is inner
        assert get_event_storage() is outer
    assert not events.has_event_storage()
    EventStorage().__enter__()  # left open, as a failing test might
    assert events.has_event_storage()
    reset_event_storages()
    with pytest.raises(RuntimeError):
        get_event_storage()


def test_model_forward_can_put_into_the_storage():
    class Tiny(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = flow.nn.Linear(2, 1)

        def forward(self, x):
            out = self.linear(x)
            get_event_storage().put_scalar("act_mean", out.mean())
            return out

    model = Tiny()
    x = flow.ones(3, 2)
    with EventStorage() as storage:
        out = model(x)
        out.sum().backward()
        expected = float(out.mean().numpy())
    assert storage.history("act_mean").latest() == pytest.approx(expected)


def test_state_dict_keeps_last_n_and_round_trips():
    with EventStorage(checkpoint_history=3) as storage:
        for i in range(6):
            storage.iter = i
            storage.put_scalar("loss", float(i))
        storage.put_scalar("acc", 0.9, smoothing_hint=False, cur_iter=5)
        state = storage.state_dict()
    assert state["iter"] == 5
    assert state["histories"]["loss"]["values"] == [(3.0, 3), (4.0, 4), (5.0, 5)]
    json.dumps(state)  # plain data: fits in any checkpoint format
    restored = EventStorage()
    restored.load_state_dict(state)
    assert restored.iter == 5
    assert restored.history("loss").global_avg() == pytest.approx(2.5)  # all 6 values
    assert restored.history("loss").median(3) == 4.0
    assert restored.smoothing_hint("acc") is False




def _read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


# ------------------------------------------------------------------------------- two processes
_TWO_RANK_SCRIPT = '''
import json, sys
import libai  # noqa: F401
import oneflow as flow
from libai.utils import distributed as dist
from libai.utils.events import EventStorage, JSONWriter

rank = flow.env.get_rank()
both = flow.placement("cpu", ranks=[0, 1])
loss = flow.tensor([1.0 + rank]).to_global(placement=both, sbp=flow.sbp.split(0)).sum()
on_rank1 = flow.tensor(5.0).to_global(placement=flow.placement("cpu", ranks=[0]),
                                      sbp=flow.sbp.broadcast)
on_rank1 = on_rank1.to_global(placement=flow.placement("cpu", ranks=[1]))
rejected = []
with EventStorage() as storage:
    for name, value in (("partial", loss), ("on_rank1", on_rank1)):
        try:
            storage.put_scalar(name, value)
        except ValueError:
            rejected.append(name)
    storage.put_scalar("total_loss", dist.ttol(loss))
    storage.put_scalar("stage_value", dist.ttol(on_rank1))
    if dist.is_main_process():  # only rank 0 writes; reading must not need the other rank
        writer = JSONWriter(sys.argv[1])
        writer.write()
        writer.close()
print("rank%d rejected=[%s]" % (rank, ",".join(rejected)), flush=True)  # bracketed: the ranks share stdout
'''


def test_global_tensors_in_two_processes(tmp_path):
    from libai.utils.testing import launch

    script = tmp_path / "two_ranks.py"
    script.write_text(_TWO_RANK_SCRIPT)
    out = tmp_path / "metrics.json"
    result = launch(str(script), nproc=2, args=[str(out)], timeout=180)
    assert result.returncode == 0, result.stdout[-3000:]
    # A partial sum is unreadable everywhere; a tensor on rank 1 only is unreadable on rank 0.
    assert "rank0 rejected=[partial,on_rank1]" in result.stdout
    assert "rank1 rejected=[partial]" in result.stdout
    assert _read_lines(out) == [{"iteration": 0, "total_loss": 3.0, "stage_value": 5.0}]


def test_many_pending_tensors_are_read_in_one_transfer_with_the_same_values():
    import oneflow as flow

    from libai.utils.history import to_floats

    values = [flow.tensor(1.5), 2, flow.tensor([3.25]), 4.0]
    assert to_floats(values) == [1.5, 2.0, 3.25, 4.0]


def test_events_is_a_plain_re_export_of_the_storage_and_the_writers():
    """The storage has its own module and knows nothing of the writers (no import cycle); the
    names users import from libai.utils.events are the same objects."""
    import ast

    from libai.utils import storage, writers

    for name in ("EventStorage", "get_event_storage", "has_event_storage", "reset_event_storages"):
        assert getattr(events, name) is getattr(storage, name), name
    for name in ("EventWriter", "JSONWriter", "CommonMetricPrinter", "TensorboardXWriter"):
        assert getattr(events, name) is getattr(writers, name), name
    with open(storage.__file__) as f:
        tree = ast.parse(f.read())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and ("writers" in m or "events" in m)}, imported
