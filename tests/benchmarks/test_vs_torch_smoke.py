"""benchmarks/vs_torch.py: the libai side of ``--quick`` runs end to end without torch (HF_ENV
unset), and the parts that need no child process behave. The torch comparison needs HF_ENV."""
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "benchmarks", "vs_torch.py")
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import vs_torch as bench  # noqa: E402


def _env_without_hf():
    return {k: v for k, v in os.environ.items() if k != "HF_ENV"}


def test_quick_without_hf_env_trains_every_model_in_graph_and_eager():
    proc = subprocess.run([sys.executable, SCRIPT, "--quick"], capture_output=True, text=True,
                          env=_env_without_hf(), cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "HF_ENV is not set; --quick runs the libai side alone" in out
    assert "torch side not run" in out and "OMP_NUM_THREADS=1 both sides" in out
    losses = {}
    for model in bench.MODELS:
        for mode in bench.LIBAI_MODES:
            row = re.search(rf"^{model}\s+{mode}\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)$", out, re.M)
            assert row, (model, mode, out)
            wall, cpu, first, loss = map(float, row.groups())
            assert wall > 0 and cpu > 0 and first > 0
            losses[(model, mode)] = loss
        # the same model, seed, data and update: Graph and Eager reach the same loss after a step
        assert losses[(model, "graph")] == pytest.approx(losses[(model, "eager")], abs=2e-3)
        # a vocabulary of 128 starts near ln(128) = 4.85
        assert 4.0 < losses[(model, "eager")] < 5.5


def test_full_run_without_hf_env_exits_with_the_recipe():
    proc = subprocess.run([sys.executable, SCRIPT, "--models", "gpt2"], capture_output=True,
                          text=True, env=_env_without_hf(), cwd=REPO, timeout=60)
    assert proc.returncode == 1
    assert "vs_torch: HF_ENV is not set" in proc.stderr and "python3.11 -m venv" in proc.stderr


@pytest.mark.parametrize("argv, message", [
    (["--models", "gpt2,t5"], "--models must name some of gpt2, bert, llama; got ['t5']"),
    (["--modes", ""], "--modes must name some of graph, eager; got none"),
    (["--iters", "0"], "--iters must be >= 1, got 0"),
])
def test_bad_arguments_are_refused_by_name(argv, message, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(argv)
    assert message in capsys.readouterr().err


def test_defaults_are_the_issue_shapes_and_the_batch_is_shared():
    args = bench.parse_args([])
    assert (args.batch_size, args.seq, args.threads) == (4, 128, 1)
    gpt = args.shapes["gpt2"]
    assert (gpt["layers"], gpt["hidden"], gpt["heads"], gpt["ffn"], gpt["vocab"]) == (4, 256, 8, 1024, 8192)
    a = bench.make_batch("bert", 4, 128, 8192, seed=0)
    b = bench.make_batch("bert", 4, 128, 8192, seed=0)
    assert (a["ids"] == b["ids"]).all() and (a["masked"] == b["masked"]).all()
    assert a["masked"][:, 0].all() and 0.1 < a["masked"].mean() < 0.2
    assert "masked" not in bench.make_batch("gpt2", 4, 128, 8192, seed=0)
