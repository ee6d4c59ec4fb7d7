"""Reading metrics.json (truncated lines, resumed runs) and drawing PNG curves, from the library
and through tools/plot_metrics.py."""
import json
import os
import subprocess
import sys

import pytest
from PIL import Image

from libai.utils.plot import group_series, metric_series, plot_metrics, read_metrics

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO_ROOT, "tools", "plot_metrics.py")


def _write_metrics(path, truncated_tail=True):
    lines = []
    for it in range(0, 60, 10):
        lines.append({"iteration": it, "total_loss": 3.0 - it / 30, "lm_loss": 1.0,
                      "lr": 1e-3 * (it + 1) / 60, "time": 0.2, "data_time": 0.01,
                      "throughput": 320.0})
    lines.append({"iteration": 29, "Acc@1": 40.0, "Acc@5": 70.0})
    # A resumed run repeats iteration 50 with a different loss: the later line wins.
    lines.append({"iteration": 50, "total_loss": 0.75})
    lines.append({"iteration": 59, "Acc@1": 55.0, "Acc@5": 80.0})
    text = "".join(json.dumps(line) + "\n" for line in lines)
    if truncated_tail:
        text += '{"iteration": 60, "total_lo'
    path.write_text(text)
    return lines


def test_read_metrics_skips_a_truncated_last_line(tmp_path, caplog):
    path = tmp_path / "metrics.json"
    lines = _write_metrics(path)
    records = read_metrics(str(path))
    assert records == lines
    assert "skipped 1 unreadable line(s): [10]" in caplog.text


def test_metric_series_sorts_and_keeps_the_last_value_of_a_repeated_iteration(tmp_path):
    path = tmp_path / "metrics.json"
    _write_metrics(path)
    series = metric_series(read_metrics(str(path)))
    assert series["total_loss"] == [(0, 3.0), (10, 2.0 + 2 / 3), (20, 3.0 - 2 / 3), (30, 2.0),
                                    (40, 3.0 - 4 / 3), (50, 0.75)]
    assert series["Acc@1"] == [(29, 40.0), (59, 55.0)]
    groups = group_series(series)
    assert set(groups) == {"losses", "lr", "timing", "eval"}
    assert set(groups["losses"]) == {"total_loss", "lm_loss"}
    assert set(groups["timing"]) == {"time", "data_time", "throughput"}
    assert set(groups["eval"]) == {"Acc@1", "Acc@5"}


def _assert_png(path):
    assert os.path.getsize(path) > 0
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size[0] > 100 and image.size[1] > 100


def test_plot_metrics_writes_valid_pngs(tmp_path):
    path = tmp_path / "metrics.json"
    _write_metrics(path)
    written = plot_metrics(str(path), str(tmp_path / "plots"))
    names = sorted(os.path.basename(p) for p in written)
    assert names == ["eval.png", "losses.png", "lr.png", "timing.png"]
    for png in written:
        _assert_png(png)


def test_plot_metrics_skips_groups_without_values(tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text('{"iteration": 0, "total_loss": 1.0}\n{"iteration": 5, "total_loss": 0.5}\n')
    written = plot_metrics(str(path), str(tmp_path / "plots"))
    assert [os.path.basename(p) for p in written] == ["losses.png"]


def test_bad_inputs_say_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="metrics.json"):
        read_metrics(str(tmp_path / "missing.json"))
    not_metrics = tmp_path / "config.yaml"
    not_metrics.write_text("model:\n  x: 1\n")
    with pytest.raises(ValueError, match="holds no metrics lines"):
        read_metrics(str(not_metrics))


def test_tool_help_and_run(tmp_path):
    shown = subprocess.run([sys.executable, TOOL, "--help"], capture_output=True, text=True)
    assert shown.returncode == 0
    assert "--input" in shown.stdout and "--output-dir" in shown.stdout and "run's output directory" in shown.stdout

    path = tmp_path / "output" / "metrics.json"
    path.parent.mkdir()
    _write_metrics(path)
    run = subprocess.run([sys.executable, TOOL, "--input", str(path)],
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    plots = tmp_path / "output" / "plots"  # default: next to the input
    assert sorted(os.listdir(plots)) == ["eval.png", "losses.png", "lr.png", "timing.png"]
    groups = ("losses", "lr", "timing", "eval")
    assert run.stdout.split() == [str(plots / f"{g}.png") for g in groups]
    for png in plots.iterdir():
        _assert_png(png)

    failed = subprocess.run([sys.executable, TOOL, "--input", str(tmp_path / "nope.json")],
                            capture_output=True, text=True)
    assert failed.returncode == 1 and "no metrics file" in failed.stderr


def test_tool_takes_the_run_directory_as_its_argument(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _write_metrics(run_dir / "metrics.json")
    groups = ("losses", "lr", "timing", "eval")
    by_dir = subprocess.run([sys.executable, TOOL, str(run_dir)], capture_output=True, text=True,
                            cwd=str(tmp_path))
    assert by_dir.returncode == 0, by_dir.stderr
    assert by_dir.stdout.split() == [str(run_dir / "plots" / f"{g}.png") for g in groups]
    for png in (run_dir / "plots").iterdir():
        _assert_png(png)
    # the file itself works as the argument too, and --output-dir still applies
    by_file = subprocess.run([sys.executable, TOOL, str(run_dir / "metrics.json"), "--output-dir",
                              str(tmp_path / "elsewhere")], capture_output=True, text=True)
    assert by_file.returncode == 0, by_file.stderr
    assert sorted(os.listdir(tmp_path / "elsewhere")) == sorted(f"{g}.png" for g in groups)

    both = subprocess.run([sys.executable, TOOL, str(run_dir), "--input", str(run_dir / "metrics.json")],
                          capture_output=True, text=True)
    assert both.returncode == 2 and "give the run" in both.stderr and "not both" in both.stderr
    empty = tmp_path / "not_a_run"
    empty.mkdir()
    missing = subprocess.run([sys.executable, TOOL, str(empty)], capture_output=True, text=True)
    assert missing.returncode == 1
    assert f"error: no metrics file at {empty / 'metrics.json'}: {empty} is not a run's output directory" in missing.stderr


def test_timing_puts_seconds_and_samples_per_second_on_separate_axes(tmp_path):
    """Throughput (thousands of samples/s) and step times (hundredths of a second) on one linear
    axis leave the times flat at 0: each unit gets its own panel of timing.png."""
    from libai.utils.plot import plot_metrics, timing_panels

    members = {"time": [(0, 0.02), (1, 0.03)], "data_time": [(0, 0.001), (1, 0.002)],
               "throughput": [(0, 3000.0), (1, 2100.0)], "eta_seconds": [(0, 50.0), (1, 40.0)]}
    panels = timing_panels(members)
    assert [(label, sorted(series)) for label, series in panels] == [
        ("seconds per iteration", ["data_time", "time"]), ("samples / s", ["throughput"]),
        ("seconds left", ["eta_seconds"])]
    metrics = tmp_path / "metrics.json"
    metrics.write_text("".join(json.dumps({"iteration": i, "time": t, "throughput": 64 / t}) + "\n"
                               for i, t in enumerate((0.02, 0.03, 0.025))))
    written = plot_metrics(str(metrics), str(tmp_path / "plots"))
    assert any(p.endswith("timing.png") for p in written)
