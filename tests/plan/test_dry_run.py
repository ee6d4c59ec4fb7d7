"""``--dry-run`` of every config in configs/ passes (in this one process), a GPT-3 175B config is
planned on this machine, and the command line gives the numbers ``libai.plan`` gives."""
import glob
import io
import json
import os
import re
import subprocess
import sys

import pytest

import libai
from libai.config import LazyConfig, default_argument_parser
from libai.plan.cli import run_dry_run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(REPO, "configs")
GPT3 = os.path.join(CONFIGS, "gpt3_175b_pretrain.py")

PROJECTS = os.path.join(REPO, "projects")


def _training_configs():
    """Every config of configs/ and projects/*/configs/ that defines a run (``train``); a file
    that only holds pieces its siblings import (projects/text_classification/configs/bert_tiny.py)
    is not a config to launch."""
    found = sorted(glob.glob(os.path.join(CONFIGS, "*.py")) + glob.glob(os.path.join(CONFIGS, "examples", "*.py"))
                   + glob.glob(os.path.join(PROJECTS, "*", "configs", "*.py"))
                   + glob.glob(os.path.join(PROJECTS, "*", "configs", "*.yaml")))
    return [p for p in found if "train" in LazyConfig.load(p)]


ALL_CONFIGS = _training_configs()


def dry_run(*argv):
    args = default_argument_parser().parse_args(list(argv))
    out = io.StringIO()
    return run_dry_run(args, out), out.getvalue()


def test_every_config_is_found():
    names = {os.path.relpath(p, REPO) for p in ALL_CONFIGS}
    assert {"configs/resnet50_imagenet.py", "projects/MNIST/configs/config.py",
            "projects/registry_style/configs/digits.yaml"} <= names
    assert "projects/text_classification/configs/bert_tiny.py" not in names  # pieces, no run


# Recipes whose model cannot train on one 80 GB device, with the device count they are for:
# their one-device plan must say it does not fit, and the plan for that count must fit.
# Full fine-tuning of each 7B-class family (Phi-3-mini's 3.8B fits one device).
NEEDS_DEVICES = {os.path.join(CONFIGS, f"{family}_sft.py"): 8
                 for family in ("llama", "qwen2", "mistral", "gemma", "qwen3")}


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: os.path.relpath(p, REPO))
def test_dry_run_of_every_config_passes(path):
    """Each config plans with exit 0, a time plan within the device's peak (the planner asserts
    it), and ranks layouts for 8 devices; one process for all of them."""
    status, text = dry_run("--config-file", path, "--dry-run")
    if path in NEEDS_DEVICES:
        assert status != 0 and "does NOT fit in 80.00 GiB" in text, text
        status, text = dry_run("--config-file", path, "--dry-run", "--world-size", str(NEEDS_DEVICES[path]))
    assert status == 0, text
    assert "0 error(s)" in text and "fits in 80.00 GiB" in text, text
    assert re.search(r"= [0-9.]+ (s|ms|µs) per step", text), text
    assert "not counted" not in text, text
    status, text = dry_run("--config-file", path, "--dry-run", "--suggest", "--world-size", "8")
    if path == GPT3:  # its layout is TP 8 × PP 8, and 175B parameters need far more than 8 devices
        assert status == 1 and "world size 8 is not divisible by tensor_parallel_size (8)" in text
        return
    assert status == 0, text
    assert "layouts ranked by estimated step time" in text and "| 1 " in text


def test_gpt3_175b_is_planned_here_without_its_memory():
    """174.6B parameters (Brown et al.: 175B) planned in a process far smaller than one rank's
    share, for 128 nodes of 8 devices; stages hold 12 layers each, the embedding is split 8 ways."""
    import resource

    plan = libai.plan(LazyConfig.load(GPT3), nodes=128, devices_per_node=8, device_memory="80GiB",
                      check_data=False)
    assert plan.ok, plan.format()
    assert 174e9 < plan.model.num_params < 176e9
    run = plan.run
    assert (run.dp, run.tp, run.pp, run.accumulation) == (16, 8, 8, 96)
    assert [len(run.layers_of_stage(s)) for s in range(8)] == [12] * 8
    emb = next(g for g in plan.groups if g.pattern.endswith("word_embeddings.weight"))
    assert emb.sbp == "[B, S(0)]" and emb.local_shape == (51200 // 8, 12288)
    # a rank of stage 0, by hand: 12 blocks (split matrices and biases / 8, norms and the
    # row-parallel biases whole) + the word embedding / 8 + the positions, in fp32
    h = 12288
    block = (3 * h * h + 3 * h + h * h + 4 * h * h + 4 * h + 4 * h * h) // 8 + 4 * h + 2 * h
    assert plan.memory[0].parameters == 4 * (12 * block + 51200 * h // 8 + 2048 * h)
    assert plan.fits
    peak_rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    assert peak_rss_gib < plan.memory[0].parameters / 2 ** 30  # planned without allocating it


def test_cli_prints_and_writes_the_numbers_libai_plan_computes(tmp_path):
    """One subprocess through tools/train_net.py (a fresh interpreter: no multi-process runtime,
    no GPU) against the same call in this process."""
    out = tmp_path / "plan.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "train_net.py"), "--config-file", GPT3, "--dry-run",
         "--suggest", "--top", "3", "--nodes", "128", "--devices-per-node", "8", "--device-memory", "80GiB",
         "--no-data-check", "--plan-json", str(out), "train.train_micro_batch_size=2"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "layouts ranked by estimated step time" in proc.stdout
    cli = json.loads(out.read_text())
    api = libai.plan(LazyConfig.load(GPT3), nodes=128, devices_per_node=8, device_memory="80GiB",
                     check_data=False, overrides=["train.train_micro_batch_size=2"]).as_dict()
    assert cli["memory"] == api["memory"] and cli["time"] == api["time"]
    assert cli["layout"] == api["layout"] == "DP16×TP8×PP8, micro 2 × 48 acc, act. ckpt"
    assert len(cli["suggestions"]) == 3


def test_exit_status_two_and_advice_when_a_rank_does_not_fit():
    status, text = dry_run("--config-file", GPT3, "--dry-run", "--nodes", "128", "--devices-per-node", "8",
                           "--device-memory", "24GiB", "--no-data-check",
                           "train.activation_checkpoint.enabled=False")
    assert status == 2, text
    assert "does NOT fit in 24.00 GiB" in text
    assert "turn activation checkpointing on (train.activation_checkpoint.enabled=True)" in text
    assert "ZeRO-1" in text and "--suggest" in text


def test_exit_status_one_lists_every_error():
    status, text = dry_run("--config-file", os.path.join(CONFIGS, "examples", "gpt_tiny_synthetic.py"),
                           "--dry-run", "--world-size", "6", "train.dist.tensor_parallel_size=4",
                           "optim.lrr=1", "train.evaluation.eval_metric='Acc@1'")
    assert status == 1
    assert "world size 6 is not divisible" in text and "optim.lrr" in text and "'Acc@1'" in text
    assert "3 error(s)" in text
