"""EventStorage and HistoryBuffer: histories, smoothing, lazy tensor reads, the storage stack,
checkpoints; and the JSON, console and TensorBoard writers."""
import datetime
import json
import logging
import os
import random
import statistics
import struct
import sys
import types

import numpy as np
import oneflow as flow
import pytest

from libai.utils import events
from libai.utils.events import (
    CommonMetricPrinter,
    EventStorage,
    JSONWriter,
    TensorboardXWriter,
    get_event_storage,
    reset_event_storages,
)
from libai.utils.history import HistoryBuffer
from libai.utils.writers import peak_rss_mib


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


# ------------------------------------------------------------------------------- JSONWriter
def _train_steps(storage, start, stop, losses, times, lr=1e-3):
    for i in range(start, stop):
        storage.iter = i
        storage.put_scalars(total_loss=losses[i], lm_loss=losses[i] / 2, time=times[i],
                            data_time=times[i] / 10)
        storage.put_scalar("lr", lr * (i + 1), smoothing_hint=False)


def _read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_json_writer_training_lines_fields_and_values(tmp_path):
    rng = random.Random(1)
    losses = [rng.uniform(0, 3) for _ in range(10)]
    times = [rng.uniform(0.1, 0.3) for _ in range(10)]
    path = tmp_path / "out" / "metrics.json"
    with EventStorage() as storage:
        writer = JSONWriter(str(path), window_size=4, samples_per_iter=32)
        _train_steps(storage, 0, 5, losses, times)
        writer.write()
        _train_steps(storage, 5, 10, losses, times)
        writer.write()
        writer.close()
    first, second = _read_lines(path)
    assert first["iteration"] == 4 and second["iteration"] == 9
    expected_time = statistics.median(times[6:10])
    assert second["total_loss"] == pytest.approx(statistics.median(losses[6:10]))
    assert second["lm_loss"] == pytest.approx(statistics.median([v / 2 for v in losses[6:10]]))
    assert second["time"] == pytest.approx(expected_time)
    assert second["data_time"] == pytest.approx(statistics.median([t / 10 for t in times[6:10]]))
    assert second["lr"] == pytest.approx(1e-2)  # not smoothed: the latest value
    assert second["throughput"] == pytest.approx(32 / expected_time)
    assert set(second) == {"iteration", "total_loss", "lm_loss", "time", "data_time", "lr",
                           "throughput"}


def test_json_writer_writes_only_new_scalars(tmp_path):
    path = tmp_path / "metrics.json"
    with EventStorage() as storage:
        writer = JSONWriter(str(path))
        storage.put_scalar("total_loss", 1.0)
        writer.write()
        writer.write()  # nothing new: no line
        storage.iter = 1
        storage.put_scalar("lr", 0.5, smoothing_hint=False)
        writer.write()
        writer.close()
    assert _read_lines(path) == [{"iteration": 0, "total_loss": 1.0}, {"iteration": 1, "lr": 0.5}]


def test_json_writer_eval_results_go_under_their_iteration(tmp_path):
    path = tmp_path / "metrics.json"
    with EventStorage() as storage:
        writer = JSONWriter(str(path))
        storage.iter = 4
        storage.put_scalar("total_loss", 2.0)
        writer.write()
        # Evaluation after iteration 4 was written, then two more before the next write.
        storage.put_scalar("Acc@1", 51.0, smoothing_hint=False, cur_iter=4)
        storage.iter = 9
        storage.put_scalar("total_loss", 1.0)
        storage.put_scalar("Acc@1", 60.0, smoothing_hint=False, cur_iter=7)
        storage.put_scalar("Acc@1", 70.0, smoothing_hint=False, cur_iter=9)
        writer.write()
        writer.close()
    assert _read_lines(path) == [
        {"iteration": 4, "total_loss": 2.0},
        {"iteration": 4, "Acc@1": 51.0},
        {"iteration": 7, "Acc@1": 60.0},
        {"iteration": 9, "total_loss": 1.5, "Acc@1": 70.0},  # median of [2, 1] over the window
    ]


def test_json_writer_appends_across_writers_and_after_a_crash(tmp_path):
    path = tmp_path / "metrics.json"
    with EventStorage() as storage:
        first = JSONWriter(str(path))
        storage.put_scalar("total_loss", 3.0)
        first.write()
        first.close()
    with open(path, "a") as f:
        f.write('{"iteration": 1, "total_lo')  # a run killed mid-line
    with EventStorage(start_iter=5) as storage:
        second = JSONWriter(str(path))
        storage.put_scalar("total_loss", 1.0)
        second.write()
        # Flushed at write time: readable before close.
        with open(path) as f:
            lines = f.read().splitlines()
        second.close()
    assert json.loads(lines[0]) == {"iteration": 0, "total_loss": 3.0}
    assert lines[1] == '{"iteration": 1, "total_lo'
    assert json.loads(lines[2]) == {"iteration": 5, "total_loss": 1.0}


def test_writer_starts_over_with_a_new_storage(tmp_path):
    path = tmp_path / "metrics.json"
    writer = JSONWriter(str(path))
    for start in (0, 100):
        with EventStorage(start_iter=start) as storage:
            storage.put_scalar("total_loss", float(start))
            writer.write()
    writer.close()
    assert [line["iteration"] for line in _read_lines(path)] == [0, 100]


def test_writer_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="samples_per_iter must be the"):
        JSONWriter(str(tmp_path / "m.json"), samples_per_iter=0)
    with pytest.raises(ValueError, match="window_size must be >= 1"):
        CommonMetricPrinter(10, window_size=0)
    with pytest.raises(ValueError, match="max_iter must be >= 1"):
        CommonMetricPrinter(0)


# ------------------------------------------------------------------------------- printer
class ListHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def captured_logger():
    log = logging.getLogger("test_events.printer")
    handler = ListHandler()
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    yield log, handler.messages
    log.removeHandler(handler)


def test_printer_line_eta_throughput_and_memory(captured_logger):
    log, messages = captured_logger
    times = [3.0, 1.0, 2.5, 1.5, 2.0]
    losses = [2.0, 1.5, 1.25, 1.0, 0.5]
    printer = CommonMetricPrinter(max_iter=1000, window_size=4, samples_per_iter=64,
                                  device_type="cpu", log=log)
    with EventStorage() as storage:
        _train_steps(storage, 0, 5, losses, times, lr=1e-4)
        rss_before = peak_rss_mib()
        printer.write()
        printer.write()  # same iteration: not printed again
    assert len(messages) == 1
    line = messages[0]
    median_time = statistics.median(times[-4:])  # 1.75: ETA 0:29:01 for 995 iterations left
    eta = datetime.timedelta(seconds=round(median_time * (1000 - 4 - 1)))
    fields = dict(part.split(": ", 1) for part in line.split("  "))
    assert fields["iter"] == "4/1000"
    assert fields["eta"] == str(eta)
    assert float(fields["total_loss"]) == pytest.approx(statistics.median(losses[-4:]), abs=1e-4)
    assert float(fields["lm_loss"]) == pytest.approx(statistics.median(losses[-4:]) / 2, abs=1e-4)
    assert fields["lr"] == "5.00e-04"
    assert float(fields["time"]) == pytest.approx(median_time, abs=1e-4)
    assert fields["throughput"] == f"{64 / median_time:.1f} samples/s"
    assert "max_mem" not in fields
    rss = float(fields["max_rss"].rstrip("M"))
    assert rss_before - 1 <= rss <= peak_rss_mib() + 1


def _fake_nvml(usage_bytes):
    proc = types.SimpleNamespace(pid=os.getpid(), usedGpuMemory=0)
    other = types.SimpleNamespace(pid=os.getpid() + 1, usedGpuMemory=5 * 2**30)
    return types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [
            types.SimpleNamespace(pid=proc.pid, usedGpuMemory=usage_bytes.pop(0)), other
        ],
    )


def test_printer_cuda_memory_is_the_peak_seen(monkeypatch, captured_logger):
    log, messages = captured_logger
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml([300 * 2**20, 200 * 2**20]))
    printer = CommonMetricPrinter(max_iter=10, device_type="cuda", log=log)
    with EventStorage() as storage:
        for i in range(2):
            storage.iter = i
            storage.put_scalar("total_loss", 1.0)
            printer.write()
    assert messages[0].endswith("max_mem: 300M")
    assert messages[1].endswith("max_mem: 300M")  # usage fell to 200M; the peak stays


def test_printer_without_nvml_leaves_memory_out(monkeypatch, captured_logger):
    log, messages = captured_logger
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` fail
    printer = CommonMetricPrinter(max_iter=10, device_type="cuda", log=log)
    with EventStorage() as storage:
        storage.put_scalar("total_loss", 1.0)
        printer.write()
    assert messages == ["iter: 0/10  total_loss: 1.0000"]


# ------------------------------------------------------------------------------- TensorBoard
def _read_tfrecords(path):
    """Parse TFRecord framing: u64 length, u32 crc, payload, u32 crc."""
    from tensorboardX.proto import event_pb2

    found = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        payload = data[pos + 12:pos + 12 + length]
        pos += 12 + length + 4
        event = event_pb2.Event.FromString(payload)
        for value in event.summary.value:
            found.append((value.tag, round(value.simple_value, 5), event.step))
    assert pos == len(data)
    return found


def test_tensorboard_writer_writes_readable_events(tmp_path):
    with EventStorage() as storage:
        writer = TensorboardXWriter(str(tmp_path / "tb"), window_size=2, samples_per_iter=8)
        for i in range(3):
            storage.iter = i
            storage.put_scalars(total_loss=float(3 - i), time=0.5)
        storage.put_scalar("Acc@1", 12.5, smoothing_hint=False, cur_iter=2)
        writer.write()
        writer.close()
    files = os.listdir(tmp_path / "tb")
    assert len(files) == 1 and files[0].startswith("events.out.tfevents")
    scalars = _read_tfrecords(tmp_path / "tb" / files[0])
    assert sorted(scalars) == sorted([
        ("total_loss", 1.5, 2), ("time", 0.5, 2), ("throughput", 16.0, 2), ("Acc_1", 12.5, 2),
    ])


def test_tensorboard_writer_missing_package_names_the_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    with pytest.raises(ImportError, match=r"pip install tensorboardX==2\.6\.5"):
        TensorboardXWriter(str(tmp_path / "tb"))


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
print("rank%d rejected=%s" % (rank, ",".join(rejected)), flush=True)
'''


def test_global_tensors_in_two_processes(tmp_path):
    from libai.utils.testing import launch

    script = tmp_path / "two_ranks.py"
    script.write_text(_TWO_RANK_SCRIPT)
    out = tmp_path / "metrics.json"
    result = launch(str(script), nproc=2, args=[str(out)], timeout=180)
    assert result.returncode == 0, result.stdout[-3000:]
    # A partial sum is unreadable everywhere; a tensor on rank 1 only is unreadable on rank 0.
    assert "rank0 rejected=partial,on_rank1" in result.stdout
    assert "rank1 rejected=partial\n" in result.stdout
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
