"""Evaluation of a pipeline-parallel Graph run on the CPU.

OneFlow 0.9 aborts a pipeline-parallel graph fed one micro-batch on the CPU, and an evaluation
graph always is; libai evaluates such runs eagerly with the training graph's weights
(graph_evaluation_supported). The proof: a PP=2 Graph run of the tiny GPT config trains and
evaluates to the end, and the perplexity it reports equals that of its final checkpoint
evaluated in one process with --eval-only (rtol 1e-5: the same weights, summed in another order).
"""
import os
import re
import sys

import pytest

from libai.utils.distributed import ParallelLayout
from libai.engine.support import graph_evaluation_supported
from libai.utils.testing import launch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engine"))
from mnist_helpers import REPO, read_metrics, run_train_net  # noqa: E402

CONFIG = os.path.join(REPO, "configs", "examples", "gpt_tiny_synthetic.py")


@pytest.mark.parametrize(
    "sizes,world,device,supported",
    [
        (dict(pipeline_parallel_size=2), 2, "cpu", False),
        (dict(tensor_parallel_size=2, pipeline_parallel_size=2), 4, "cpu", False),
        (dict(tensor_parallel_size=2), 2, "cpu", True),
        (dict(), 2, "cpu", True),
        (dict(), 1, "cpu", True),
    ],
    ids=["pp2", "tp2xpp2", "tp2", "dp2", "one-process"],
)
def test_only_pipeline_parallel_cpu_runs_evaluate_eagerly(sizes, world, device, supported):
    layout = ParallelLayout.from_config(dict(sizes, device_type=device, pipeline_num_layers=4),
                                        world_size=world, rank=0)
    assert graph_evaluation_supported(layout) is supported
    assert graph_evaluation_supported(None)


def test_a_pipeline_parallel_graph_run_evaluates_and_matches_one_process_eval(tmp_path):
    out = str(tmp_path / "pp2")
    args = ["--config-file", CONFIG, f"train.output_dir={out}", "graph.enabled=True",
            "train.dist.pipeline_parallel_size=2", "train.num_accumulation_steps=2",
            "train.train_iter=6", "train.evaluation.eval_period=3", "train.log_period=1"]
    proc = launch(os.path.join(REPO, "tools", "train_net.py"), 2, args, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-4000:]
    # logged only when the trainer built the Graph-mode runner (so a Graph switch that silently
    # ran Eager fails here, not only the loss comparisons)
    assert "Evaluation runs in Eager mode" in proc.stdout
    evaluated = [m for m in read_metrics(os.path.join(out, "metrics.json")) if "PPL" in m]
    assert [m["iteration"] for m in evaluated] == [2, 5]

    again = run_train_net(["--config-file", CONFIG, "--eval-only", f"train.output_dir={out}",
                           f"train.load_weight={os.path.join(out, 'model_final')}"], timeout=600)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    one_process = float(re.findall(r"\| PPL\s+\|\s+([0-9.]+)", again.stdout + again.stderr)[-1])
    assert one_process == pytest.approx(evaluated[-1]["PPL"], rel=1e-5)
