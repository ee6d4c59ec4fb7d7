"""setup_logger files and idempotency, the rate-limited helpers, tables and the env table."""
import logging
import os
import sys

import numpy as np
import oneflow as flow
import pytest

import libai
from libai.utils import logger as lg

NAME = "libai_test_logger"  # a logger of our own, so other tests' logging is untouched


@pytest.fixture(autouse=True)
def _clean_logger():
    lg.reset_logger(NAME)
    lg.reset_log_counters()
    yield
    lg.reset_logger(NAME)
    lg.reset_log_counters()


def _read(path):
    with open(path) as f:
        return f.read()


def test_rank0_writes_log_txt_and_console(tmp_path, capsys):
    log = lg.setup_logger(str(tmp_path / "out"), name=NAME, color=False)
    logging.getLogger(NAME + ".child").info("hello from a child")
    log.debug("debug detail")
    text = _read(tmp_path / "out" / "log.txt")
    assert f"{NAME}.child INFO: hello from a child" in text
    assert "debug detail" in text
    out = capsys.readouterr().out
    assert "hello from a child" in out and "debug detail" in out


def test_setup_twice_does_not_double_handlers(tmp_path):
    lg.setup_logger(str(tmp_path), name=NAME, color=False)
    log = lg.setup_logger(str(tmp_path), name=NAME, color=False)
    assert len(log.handlers) == 2  # one console, one file
    log.info("once")
    assert _read(tmp_path / "log.txt").count("once") == 1
    lg.reset_logger(NAME)
    assert log.handlers == [] and log.propagate


def test_other_ranks_write_their_own_file_and_only_warn_on_console(tmp_path, capsys):
    log = lg.setup_logger(str(tmp_path), distributed_rank=1, name=NAME)
    log.info("quiet info")
    log.warning("loud warning")
    out = capsys.readouterr().out
    assert "quiet info" not in out and "loud warning" in out
    text = _read(tmp_path / "log.txt.rank1")
    assert "quiet info" in text and "loud warning" in text
    assert not (tmp_path / "log.txt").exists()


def test_output_may_name_the_file(tmp_path):
    log = lg.setup_logger(str(tmp_path / "logs" / "run.log"), name=NAME, color=False)
    log.info("into a named file")
    assert "into a named file" in _read(tmp_path / "logs" / "run.log")
    assert lg.log_file_path("x/run.txt", 2) == "x/run.txt.rank2"


def test_colour_console_abbreviates_and_flags_warnings(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")  # capsys is not a terminal
    lg.setup_logger(str(tmp_path), name=NAME, color=True, abbrev_name="lt")
    logging.getLogger(NAME + ".engine").warning("careful")
    out = capsys.readouterr().out
    assert "\x1b[" in out  # ANSI colour codes
    assert "lt.engine" in out and "WARNING" in out and "careful" in out
    text = _read(tmp_path / "log.txt")
    assert "\x1b[" not in text and f"{NAME}.engine WARNING: careful" in text


def test_no_colour_when_the_console_is_not_a_terminal(capsys, monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    log = lg.setup_logger(name=NAME, color=True)
    log.warning("plain please")
    out = capsys.readouterr().out
    assert "\x1b[" not in out and "WARNING: plain please" in out


def test_log_first_n_counts_per_call_site(caplog):
    caplog.set_level(logging.INFO, logger=NAME)
    for i in range(5):
        lg.log_first_n(logging.INFO, f"loop {i}", n=2, name=NAME)
    lg.log_first_n(logging.INFO, "other site", n=2, name=NAME)
    assert [r.getMessage() for r in caplog.records] == ["loop 0", "loop 1", "other site"]


def test_log_first_n_by_message(caplog):
    caplog.set_level(logging.INFO, logger=NAME)
    for msg in ("a", "b", "a", "a", "b"):
        lg.log_first_n(logging.INFO, msg, n=1, name=NAME, key="message")
    assert [r.getMessage() for r in caplog.records] == ["a", "b"]
    with pytest.raises(ValueError, match="key must be 'caller'"):
        lg.log_first_n(logging.INFO, "x", key="callers")


def test_log_every_n(caplog):
    caplog.set_level(logging.INFO, logger=NAME)
    for i in range(1, 8):
        lg.log_every_n(logging.INFO, f"call {i}", n=3, name=NAME)
    assert [r.getMessage() for r in caplog.records] == ["call 1", "call 4", "call 7"]


def test_log_every_n_seconds_with_an_injected_clock(caplog):
    caplog.set_level(logging.INFO, logger=NAME)
    now = [100.0]
    for step in range(8):
        now[0] = 100.0 + step * 0.75  # 100, 100.75, 101.5, ... 105.25
        lg.log_every_n_seconds(logging.INFO, f"t={now[0]}", n=2, name=NAME, clock=lambda: now[0])
    assert [r.getMessage() for r in caplog.records] == ["t=100.0", "t=102.25", "t=104.5"]


def test_default_logger_name_is_the_callers_module(caplog):
    caplog.set_level(logging.INFO)
    lg.log_first_n(logging.INFO, "from the test module")
    assert caplog.records[0].name == __name__


def test_create_small_table():
    table = lg.create_small_table({"Acc@1": 81.23456, "Acc@5": 95.5})
    lines = table.splitlines()
    assert len(lines) == 3
    assert "Acc@1" in lines[0] and "Acc@5" in lines[0]
    assert "81.235" in lines[2] and "95.500" in lines[2]
    with pytest.raises(ValueError, match="at least one"):
        lg.create_small_table({})


def test_collect_env_info_reports_versions():
    info = lg.collect_env_info()
    rows = {}
    for line in info.splitlines()[2:]:
        key, _, value = line.partition("  ")
        rows[key.strip()] = value.strip()
    assert rows["oneflow"] == flow.__version__
    assert rows["numpy"] == np.__version__
    assert rows["libai"] == libai.__version__
    assert rows["CPU count"] == str(os.cpu_count())
    assert rows["CUDA available"] == str(flow.cuda.is_available())
    assert rows["Python"].startswith(sys.version.split()[0])
    assert rows["oneflow git commit"] == getattr(flow, "__git_commit__", "unknown")
