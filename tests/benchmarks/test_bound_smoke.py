"""benchmarks/bound_oneflow_step.py, bound_ops.py and bound_oneflow_decode.py run end to end at tiny sizes
(``--quick``, no torch): the plain OneFlow GPT-2, BERT and Llama train in both op formulations
to the same loss, every op of the per-op table is timed, and the plain decoder gives libai's
tokens (GPT-2 greedy and by beam search, Llama with grouped-query attention greedy)."""
import math
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "benchmarks")
sys.path.insert(0, BENCH)
from vs_torch import QUICK_SHAPES  # noqa: E402

QUICK_VOCAB = {model: shapes["vocab"] for model, shapes in QUICK_SHAPES.items()}


def _run(script, *argv):
    env = {k: v for k, v in os.environ.items() if k != "HF_ENV"}
    proc = subprocess.run([sys.executable, os.path.join(BENCH, script), *argv], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_plain_models_train_to_the_same_loss_with_oneflow_and_libai_formulations():
    out = _run("bound_oneflow_step.py", "--quick", "--models", "gpt2,bert,llama",
               "--programs", "bound-oneflow,bound-libai", "--modes", "eager")
    for model in ("gpt2", "bert", "llama"):
        losses = {}
        for program in ("bound-oneflow", "bound-libai"):
            row = re.search(rf"^{model}\s+{program}:eager\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)$", out, re.M)
            assert row, (model, program, out)
            assert float(row.group(1)) > 0 and float(row.group(2)) > 0
            losses[program] = float(row.group(3))
        # the written-out norms and cross entropy compute the values OneFlow's ops do
        assert losses["bound-oneflow"] == pytest.approx(losses["bound-libai"], abs=2e-3), model
        # small random weights: the first loss is near ln(vocab), here ln(128) = 4.85
        assert abs(losses["bound-oneflow"] - math.log(QUICK_VOCAB[model])) < 0.7, (model, losses)


def test_per_op_table_times_every_op_on_oneflow_without_hf_env():
    out = _run("bound_ops.py", "--quick")
    assert "torch not run (HF_ENV unset)" in out
    for name in ("linear qkv", "LM head", "attention bmm x2", "layer norm", "softmax", "gelu",
                 "dropout", "cross entropy", "layer norm (libai's)", "cross entropy (libai's)",
                 "AdamW update (all params)"):
        row = re.search(rf"^{re.escape(name)}.*?\s([0-9.]+)$", out, re.M)
        assert row and float(row.group(1)) >= 0, (name, out)


@pytest.mark.parametrize("options", [
    (),
    ("--model", "llama", "--kv-heads", "2"),  # 4 heads at --quick: groups of 2 query heads
    ("--beams", "3"),
], ids=["gpt2-greedy", "llama-gqa-greedy", "gpt2-beams3"])
def test_plain_decoder_generates_libais_tokens(options):
    out = _run("bound_oneflow_decode.py", "--quick", *options)
    row = re.search(r"^1\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+(\S+)$", out, re.M)
    assert row, out
    assert all(float(v) > 0 for v in row.groups()[:6])
    assert row.group(7) == "same"  # the plain program decodes exactly the tokens libai does
    family = "Llama (2 key/value heads)" if "llama" in options else "GPT-2"
    search = "beam search of 3" if "--beams" in options else "greedy"
    assert out.count(f"{family} 2 layers") == 1 and f"; {search}, prompt 8" in out, out


def test_bound_step_refuses_an_unknown_model_naming_the_known_ones(capsys):
    import bound_oneflow_step

    with pytest.raises(SystemExit):
        bound_oneflow_step.parse_args(["--models", "gpt2,t5"])
    assert "--models must name some of gpt2, bert, llama, got 'gpt2,t5'" in capsys.readouterr().err
