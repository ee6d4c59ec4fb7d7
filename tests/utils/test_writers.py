"""The writers of the event storage: JSON lines (metrics.json), the console line (ETA,
throughput, memory) and TensorBoard. (The storage itself: test_events.py.)"""
import contextlib
import datetime
import json
import logging
import os
import random
import re
import statistics
import struct
import sys
import types

import pytest

from libai.utils.events import (
    CommonMetricPrinter,
    EventStorage,
    JSONWriter,
    TensorboardXWriter,
    reset_event_storages,
)
from libai.utils.writers import peak_rss_mib


@pytest.fixture(autouse=True)
def _clean_storages():
    reset_event_storages()
    yield
    reset_event_storages()


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


@contextlib.contextmanager
def _json_writer(path, start_iter=0, **options):
    """A fresh EventStorage and a JSONWriter on ``path`` (closed at the end)."""
    with EventStorage(start_iter=start_iter) as storage:
        writer = JSONWriter(str(path), **options)
        try:
            yield storage, writer
        finally:
            writer.close()


def test_json_writer_training_lines_fields_and_values(tmp_path):
    rng = random.Random(1)
    losses = [rng.uniform(0, 3) for _ in range(10)]
    times = [rng.uniform(0.1, 0.3) for _ in range(10)]
    path = tmp_path / "out" / "metrics.json"
    with _json_writer(path, window_size=4, samples_per_iter=32) as (storage, writer):
        _train_steps(storage, 0, 5, losses, times)
        writer.write()
        _train_steps(storage, 5, 10, losses, times)
        writer.write()
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
    with _json_writer(path) as (storage, writer):
        storage.put_scalar("total_loss", 1.0)
        writer.write()
        writer.write()  # nothing new: no line
        storage.iter = 1
        storage.put_scalar("lr", 0.5, smoothing_hint=False)
        writer.write()
    assert _read_lines(path) == [{"iteration": 0, "total_loss": 1.0}, {"iteration": 1, "lr": 0.5}]


def test_json_writer_eval_results_go_under_their_iteration(tmp_path):
    path = tmp_path / "metrics.json"
    with _json_writer(path) as (storage, writer):
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
    assert _read_lines(path) == [
        {"iteration": 4, "total_loss": 2.0},
        {"iteration": 4, "Acc@1": 51.0},
        {"iteration": 7, "Acc@1": 60.0},
        {"iteration": 9, "total_loss": 1.5, "Acc@1": 70.0},  # median of [2, 1] over the window
    ]


def test_json_writer_appends_across_writers_and_after_a_crash(tmp_path):
    path = tmp_path / "metrics.json"
    with _json_writer(path) as (storage, first):
        storage.put_scalar("total_loss", 3.0)
        first.write()
    with open(path, "a") as f:
        f.write('{"iteration": 1, "total_lo')  # a run killed mid-line
    with _json_writer(path, start_iter=5) as (storage, second):
        storage.put_scalar("total_loss", 1.0)
        second.write()
        # Flushed at write time: readable before close.
        with open(path) as f:
            lines = f.read().splitlines()
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



def test_a_resumed_run_replaces_the_lines_logged_after_its_checkpoint(tmp_path):
    """An attempt logged iterations 0-6 (json) and died; the restart resumes at 5 (its checkpoint
    holds iteration 4): metrics.json and the log file then hold each iteration once."""
    from libai.utils.logger import reset_logger, setup_logger

    path = tmp_path / "metrics.json"
    log = setup_logger(str(tmp_path), name="libai_resume_probe")
    try:
        printer = CommonMetricPrinter(10, log=logging.getLogger("libai_resume_probe.writers"))
        for start, stop in ((0, 7), (5, 10)):
            with _json_writer(path, start_iter=start) as (storage, writer):
                log.info("attempt starting")
                for it in range(start, stop):
                    storage.iter = it
                    storage.put_scalar("total_loss", float(it + start))
                    writer.write()
                    printer.write()
            printer = CommonMetricPrinter(10, log=logging.getLogger("libai_resume_probe.writers"))
        log.info("after the restart")  # the handler still writes to the (replaced) file
    finally:
        reset_logger("libai_resume_probe")
    lines = _read_lines(path)
    assert [line["iteration"] for line in lines] == list(range(10))
    assert lines[4]["total_loss"] == 2.0 and lines[5]["total_loss"] == 10.0  # 5 on: the second attempt's
    text = (tmp_path / "log.txt").read_text()
    assert [int(n) for n in re.findall(r"iter: (\d+)/", text)] == list(range(10))
    assert "iter: 5/10  total_loss: 10.0000" in text
    assert text.count("attempt starting") == 2 and text.rstrip().endswith("after the restart")
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
