"""Data, tensor and pipeline parallel training matches the one-process run.

A tiny GPT (2 layers, one per stage under PP=2, hidden 32, dropout 0) trains 6 iterations (3 in
the four-process layouts) on the same synthetic data with the same seed and global batch in
every layout, in Eager and in Graph mode; the losses must equal the one-process run's.
Tolerance: rtol 1e-4. The parallel runs split the same fp32 sums across ranks (all-reduce,
partial sums of split matmuls), which changes rounding by ~1e-7 per step; over 10 steps at lr
1e-3 the observed difference stayed below 1e-5 relative, while a wrongly placed or
unsynchronised shard changes the loss in the 3rd decimal.
Graph mode with tensor/pipeline parallelism runs 2 micro-batches per step (OneFlow 0.9 on the CPU
needs them, see check_supported), which also exercises gradient accumulation against the
unaccumulated baseline.

The layouts of one world size share one launch (train_script.py trains them one after another
in the same processes): one 2-process launch for TP=2 and PP=2, one 4-process launch for the two
2-D layouts. DP=2 is trained once, by two launchers of one process each (``--nnodes 2``), as
multi-machine training is started: each layout is launched once, and DP=2 on one node is what
most of the other distributed tests run.

The same launches also train the supervised fine-tuning recipe configs/mistral_sft.py as
``--smoke`` loads it (rows of two packed chat samples, prompts masked, a sliding window inside
the packing mask; train_script.build_sft_cfg), 3 iterations: Eager and Graph mode (ZeRO-2) in one
process, Eager at TP=2 and PP=2, Graph (ZeRO-2, the recipe as shipped) at DP=2 over two nodes,
against the one-process losses. One micro-batch per step everywhere (Graph mode at TP/PP on the CPU needs
two, which the GPT runs above cover).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from libai.utils.testing import COMPILED_GRAPH, launch, launch_nodes, rank_records

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "train_script.py")
RTOL = 1e-4
TRAIN_ITERS = 6  # train_script.ITERS
ITERS = {"dp2xtp2": 3, "tp2xpp2": 3}  # the four-process layouts stop early (train_script.LAYOUTS)


def _read(out):
    with open(os.path.join(out, "losses.json")) as f:
        return json.load(f)


RUNNERS = {"eager": "EagerTrainer", "graph": COMPILED_GRAPH}


def _check_every_rank(output, nproc, out, layouts, sft_modes=()):
    """Each rank ran Graph mode in a compiled graph (equal losses alone cannot tell it from
    Eager mode) and saw the losses rank 0 wrote."""
    written = json.dumps(_read(out), separators=(",", ":"))
    for rank, record in rank_records(output, nproc).items():
        for layout in layouts:
            assert record[f"{layout}/eager"] == "EagerTrainer", (rank, layout, record)
            assert record[f"{layout}/graph"] == COMPILED_GRAPH, (rank, layout, record)
            for mode in sft_modes:
                assert record[f"sft/{layout}/{mode}"] == RUNNERS[mode], (rank, layout, mode, record)
        assert record["losses"] == written, f"rank {rank} saw other losses than rank 0 wrote"


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("one_process"))
    proc = subprocess.run([sys.executable, SCRIPT, "--out-dir", out, "one_process", "--sft-modes", "eager,graph"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    _check_every_rank(proc.stdout, 1, out, ["one_process"], ["eager", "graph"])
    return _read(out)


@pytest.fixture(scope="module")
def baseline(one_process):
    return one_process["one_process"]


@pytest.fixture(scope="module")
def sft_baseline(one_process):
    return one_process["sft/one_process"]


def _launch(tmp_path_factory, nproc, layouts, sft_modes=()):
    out = str(tmp_path_factory.mktemp(f"{nproc}_processes"))
    extra = ["--sft-modes", ",".join(sft_modes)] if sft_modes else []
    proc = launch(SCRIPT, nproc, ["--out-dir", out, *layouts, *extra], timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:]
    _check_every_rank(proc.stdout, nproc, out, layouts, sft_modes)
    return _read(out)


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    return _launch(tmp_path_factory, 2, ["tp2", "pp2"], ["eager"])


@pytest.fixture(scope="module")
def four_processes(tmp_path_factory):
    return _launch(tmp_path_factory, 4, ["dp2xtp2", "tp2xpp2"])


def _match(result, baseline, iters=TRAIN_ITERS):
    assert set(result) == {"eager", "graph"}
    for mode, losses in result.items():
        assert len(losses) == iters
        np.testing.assert_allclose(losses, baseline[mode][:iters], rtol=RTOL, err_msg=mode)


def test_baseline_eager_and_graph_agree(baseline):
    np.testing.assert_allclose(baseline["graph"], baseline["eager"], rtol=RTOL)
    assert baseline["eager"][-1] < baseline["eager"][0]


@pytest.mark.parametrize("layout", ["tp2", "pp2"])
def test_two_process_layout_matches_one_process(two_processes, baseline, layout):
    _match(two_processes[layout], baseline)


@pytest.mark.parametrize("layout", ["dp2xtp2", "tp2xpp2"])
def test_four_process_layout_matches_one_process(four_processes, baseline, layout):
    _match(four_processes[layout], baseline, ITERS[layout])


def test_sft_recipe_graph_mode_equals_eager_mode_and_learns(sft_baseline):
    """Packed, prompt-masked batches have fixed shapes ([rows, 144]; a [rows, 1, 144, 144] mask),
    so Graph mode compiles once and computes what Eager mode does."""
    assert len(sft_baseline["eager"]) == 3
    np.testing.assert_allclose(sft_baseline["graph"], sft_baseline["eager"], rtol=RTOL)
    assert sft_baseline["eager"][-1] < sft_baseline["eager"][0]


@pytest.mark.parametrize("layout", ["tp2", "pp2"])
def test_sft_recipe_at_tensor_and_pipeline_parallel_matches_one_process(two_processes, sft_baseline, layout):
    np.testing.assert_allclose(two_processes[f"sft/{layout}"]["eager"], sft_baseline["eager"], rtol=RTOL)


def test_two_nodes_on_one_machine_match_one_process(tmp_path, baseline, sft_baseline):
    """Two launchers (``--nnodes 2 --node_rank 0|1``, one process each) meeting at 127.0.0.1,
    as a user tries multi-machine training in two terminals: the DP=2 run of this module, which
    must train and match the one-process losses in both modes (the GPT; the SFT recipe in Graph
    mode with its ZeRO-2). Before libai aligned LOCAL_RANK with OneFlow's
    view of nodes (libai/_runtime.py), rank 0 hung and rank 1 all-reduced to wrong values."""
    out = str(tmp_path)
    results = launch_nodes(SCRIPT, nnodes=2, args=["--out-dir", out, "dp2", "--sft-modes", "graph"], timeout=600)
    for node, proc in enumerate(results):
        assert proc.returncode == 0, f"node {node}:\n{proc.stdout[-3000:]}"
    _check_every_rank("".join(proc.stdout for proc in results), 2, out, ["dp2"], ["graph"])
    _match(_read(out)["dp2"], baseline)
    np.testing.assert_allclose(_read(out)["sft/dp2"]["graph"], sft_baseline["graph"], rtol=RTOL)


def test_ranks_oneflow_would_confuse_fail_with_the_fix_instead_of_hanging():
    """The same two launchers, but the script imports oneflow before libai: libai cannot repair
    LOCAL_RANK any more, so building the layout must refuse (naming the fix) and the other node
    must end too (OneFlow reports the lost peer), well within the timeout."""
    from libai._runtime import _nvidia_roots

    libs = [os.path.join(root, name, "lib") for root in _nvidia_roots() for name in ("cublas", "cudnn", "cuda_nvrtc")]
    # LIBAI_IMPORT_HOOK=0: libai's start-up hook (when installed) would import libai first and fix it
    env = {"LD_LIBRARY_PATH": ":".join(libs), "PYTHONPATH": os.path.dirname(os.path.dirname(HERE)),
           "LIBAI_IMPORT_HOOK": "0"}
    results = launch_nodes(os.path.join(HERE, "late_import_script.py"), nnodes=2, env=env, timeout=180)
    assert [proc.returncode != 0 for proc in results] == [True, True], results[0].stdout[-2000:]
    assert "rank 1 has LOCAL_RANK=0, but OneFlow sees all 2 processes on one machine" in results[1].stdout
    assert "--nproc_per_node 2" in results[1].stdout
