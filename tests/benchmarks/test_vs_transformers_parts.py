"""The parts of benchmarks/vs_transformers_generation.py that need neither transformers nor
torch: argument checks, the prompts, the token comparison and the message when ``HF_ENV``
(the transformers environment, built outside the repository) is missing.
The comparison itself needs ``HF_ENV``."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "benchmarks", "vs_transformers_generation.py")
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import vs_transformers_generation as bench  # noqa: E402


def test_defaults_are_the_issue_run_and_quick_shrinks_it():
    args = bench.parse_args([])
    assert (args.layers, args.hidden, args.heads, args.vocab) == (6, 512, 8, 8192)
    assert (args.prompt_len, args.new_tokens, args.batch_sizes, args.threads) == (32, 64, [1, 8], 1)
    assert args.positions >= args.prompt_len + args.new_tokens
    quick = bench.parse_args(["--quick"])
    assert quick.repeats == 1 and quick.layers < args.layers and quick.new_tokens < args.new_tokens


@pytest.mark.parametrize("argv, message", [
    (["--batches", "1,x"], "--batches must be comma-separated integers"),
    (["--batches", "0"], "--batches must list batch sizes >= 1"),
    (["--repeats", "0"], "--repeats must be >= 1"),
    (["--hidden", "100", "--heads", "8"], "not divisible by --heads"),
    (["--positions", "64"], "--positions 64 < --prompt-len + --new-tokens (96)"),
    (["--model", "llama", "--kv-heads", "3"], "--heads 8 is not a multiple of --kv-heads 3"),
    (["--beams", "0"], "--beams must be >= 1, got 0"),
])
def test_bad_arguments_are_refused_by_name(argv, message, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(argv)
    assert message in capsys.readouterr().err


def test_prompts_are_reproducible_and_in_the_vocabulary():
    a = bench.make_prompts(8, 32, 100, seed=3)
    assert a == bench.make_prompts(8, 32, 100, seed=3)
    assert bench.make_prompts(1, 32, 100, seed=3) == a[:1]  # batch 1 is batch 8's first row
    assert a != bench.make_prompts(8, 32, 100, seed=4)
    assert len(a) == 8 and all(len(r) == 32 and all(0 <= t < 100 for t in r) for r in a)


def test_token_comparison_names_the_first_difference():
    ref = [[1, 2, 3], [4, 5, 6]]
    assert bench.first_difference(ref, [[1, 2, 3], [4, 5, 6]]) is None
    assert bench.first_difference(ref, [[1, 2, 3], [4, 9, 6]]) == "row 1, position 1: 5 against 9"
    assert bench.first_difference(ref, [[1, 2], [4, 5, 6]]) == "row 0, position 2: 3 against None"
    assert bench.first_difference(ref, ref[:1]) == "2 rows against 1"


def test_check_tokens_stops_on_a_mismatch_between_the_sides():
    same = {("libai", 1): [{"tokens": [[1, 2]]}], ("transformers", 1): [{"tokens": [[1, 2]]}]}
    bench.check_tokens(same, [1])
    differ = {("libai", 1): [{"tokens": [[1, 3]]}], ("transformers", 1): [{"tokens": [[1, 2]]}]}
    with pytest.raises(SystemExit, match="batch 1, libai turn 1 differs from transformers: row 0, position 1"):
        bench.check_tokens(differ, [1])


def test_missing_hf_env_says_how_to_build_it(tmp_path):
    for env in ({}, {"HF_ENV": "  "}):
        with pytest.raises(SystemExit, match="(?s)HF_ENV is not set.*pip install transformers"):
            bench.hf_python(env)
    with pytest.raises(SystemExit, match=f"HF_ENV={tmp_path} has no .*bin/python"):
        bench.hf_python({"HF_ENV": str(tmp_path)})
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    assert bench.hf_python({"HF_ENV": str(tmp_path)}) == str(python)


def test_the_script_without_hf_env_exits_with_the_recipe():
    env = {k: v for k, v in os.environ.items() if k != "HF_ENV"}
    proc = subprocess.run([sys.executable, SCRIPT, "--quick"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=60)
    assert proc.returncode == 1
    assert "HF_ENV is not set" in proc.stderr and "python3.11 -m venv" in proc.stderr
