"""The LiBai conformance runner's own logic (no LiBai checkout needed): reading the first
error of a failed run, the iterations and last loss of metrics.json, and the table."""
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tools.libai_conformance import data  # noqa: E402
from tools.libai_conformance.common import Result, first_error, read_metrics, table  # noqa: E402

CHAINED = """Traceback (most recent call last):
  File "/x/site-packages/oneflow/nn/module.py", line 10, in load
    raise ValueError("size mismatch for head.weight")
ValueError: size mismatch for head.weight

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/x/libai/engine/cli.py", line 5, in main
    raise libai.config.errors.InstantiationError("Error building 'model'")
libai.config.errors.InstantiationError: Error building 'model'
"""


def test_first_error_is_the_root_cause_with_its_place():
    assert first_error(CHAINED) == "oneflow/nn/module.py:10: ValueError: size mismatch for head.weight"
    qualified = f'Traceback (most recent call last):\n  File "{REPO}/libai/engine/hooks/best.py", line 48, ' \
                "in f\n    raise X\nlibai.engine.hooks.best.MetricNotReported: 'Acc@1' is not reported\n"
    assert first_error(qualified) == "libai/engine/hooks/best.py:48: MetricNotReported: 'Acc@1' is not reported"
    assert first_error("F20261126 check.cpp:28] Check failed: x\nAborted") == "Aborted"


def test_metrics_give_iterations_and_whether_the_last_loss_is_finite(tmp_path):
    assert read_metrics(str(tmp_path)) == (0, None)
    lines = [{"iteration": 0, "total_loss": 2.5}, {"iteration": 1, "total_loss": 2.1},
             {"iteration": 1, "Acc@1": 50.0}, {"iteration": 2, "total_loss": float("nan")}]
    (tmp_path / "metrics.json").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert read_metrics(str(tmp_path)) == (3, False)


def test_table_rows():
    rows = table([Result("gpt2_pretrain", "config", "ok", 4, True, "ok"),
                  Result("swin", "config", "a.py:1: KeyError: x|y", 0, None, "-")])
    assert rows.splitlines()[2] == "| gpt2_pretrain | ok | 4 | yes | ok |"
    assert rows.splitlines()[3] == "| swin | a.py:1: KeyError: x\\|y | 0 | - | - |"


def test_tiny_cifar100_is_in_the_python_release_layout(tmp_path):
    from libai.data.datasets import CIFAR100Dataset

    data.write_cifar100(str(tmp_path), train=5, test=3)
    assert sorted(os.listdir(tmp_path / "cifar-100-python")) == ["meta", "test", "train"]
    assert len(CIFAR100Dataset(str(tmp_path), train=False)) == 3
