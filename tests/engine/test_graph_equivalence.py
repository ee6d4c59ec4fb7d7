"""Graph and Eager mode agree, and each training technique keeps its equivalence claim.

Tolerance: Graph mode compiles the same fp32 arithmetic but may order reductions differently
(fused kernels, another backward schedule). The rounding differences (~1e-7) are amplified by
20 steps at a high learning rate to at most ~3e-4 relative on small losses; we assert
rtol=1e-3 (atol=1e-5), far below any real divergence: a wrong learning rate, a missing clip or
a dropped micro-batch changes these losses by 1e-2 or more (the clipping test checks that a
real difference is detected).

Equal losses cannot tell the modes apart (they compute the same numbers), so every run also
checks what ran its steps: a compiled ``nn.Graph`` (``GraphTrainer``, ``graph.is_compiled``)
when Graph mode was asked for, ``EagerTrainer`` otherwise; and that the logged learning rate
follows the schedule's formula (a scheduler that never steps would log a constant rate).
"""
import os
import shutil

import numpy as np
import pytest

from libai.config import LazyCall
from libai.utils.testing import COMPILED_GRAPH, runner_description

from lr_reference import warmup_cosine_lrs
from toy import BlockModel, recorded_trainer, toy_cfg

RTOL, ATOL = 1e-3, 1e-5


def run(out, graph=False, iters=20, resume=False, clip=1.0, one_group=True, **train):
    cfg = toy_cfg(str(out), model=LazyCall(BlockModel)(), n=128, train_iter=iters, **train)
    cfg.optim.params.clip_grad_max_norm = clip
    if one_group:
        wd = cfg.optim.weight_decay
        cfg.optim.params.weight_decay = cfg.optim.params.weight_decay_norm = cfg.optim.params.weight_decay_bias = wd
    cfg.graph.enabled = graph
    cfg.train.evaluation.enabled = False
    cfg.train.warmup_ratio = 0.1
    trainer, store = recorded_trainer(cfg, resume=resume)
    trainer.train()
    assert runner_description(trainer) == (COMPILED_GRAPH if graph else "EagerTrainer")
    expected_lr = warmup_cosine_lrs(base=cfg.optim.lr, max_iter=iters, warmup_iter=int(0.1 * iters))
    np.testing.assert_allclose(lrs(store), expected_lr[trainer.start_iter:], rtol=1e-6,
                               err_msg="the logged lr does not follow the schedule")
    weights = {k: v.numpy().copy() for k, v in trainer.model.state_dict().items()}
    return store, weights


def losses(store):
    return np.array([store[k][0] for k in sorted(store)])


def lrs(store):
    return np.array([store[k][1] for k in sorted(store)])


def test_graph_and_eager_give_the_same_losses(tmp_path):
    eager, w_e = run(tmp_path / "eager")
    graph, w_g = run(tmp_path / "graph", graph=True)
    assert len(eager) == len(graph) == 20
    np.testing.assert_allclose(losses(graph), losses(eager), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(lrs(graph), lrs(eager), rtol=1e-6)
    for k in w_e:
        np.testing.assert_allclose(w_g[k], w_e[k], rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_gradient_accumulation_equals_one_big_batch(tmp_path, graph):
    big, w_big = run(tmp_path / "big", graph=graph, iters=6, train_micro_batch_size=16)
    acc, w_acc = run(tmp_path / "acc", graph=graph, iters=6, train_micro_batch_size=4,
                     num_accumulation_steps=4)
    np.testing.assert_allclose(losses(acc), losses(big), rtol=RTOL, atol=ATOL)
    for k in w_big:
        np.testing.assert_allclose(w_acc[k], w_big[k], rtol=1e-3, atol=1e-5)


def test_clipping_by_global_norm_means_the_same_in_both_modes(tmp_path):
    # One parameter group: OneFlow's graph clips per group, which is the global norm here.
    eager, _ = run(tmp_path / "eager", graph=False, iters=8, clip=0.05, one_group=True)
    graph, _ = run(tmp_path / "graph", graph=True, iters=8, clip=0.05, one_group=True)
    np.testing.assert_allclose(losses(graph), losses(eager), rtol=RTOL, atol=ATOL)
    unclipped, _ = run(tmp_path / "none", graph=False, iters=8, clip=None, one_group=True)
    assert np.abs(losses(unclipped) - losses(eager)).max() > 1e-2, "the clip must change training"


def _resume_across(tmp_path, save_graph, resume_graph):
    full, _ = run(tmp_path / "full", graph=save_graph, iters=10, checkpointer=dict(period=5))
    out = tmp_path / "resumed"
    os.makedirs(out)
    shutil.copytree(tmp_path / "full" / "model_0000004", out / "model_0000004")
    (out / "last_checkpoint").write_text("model_0000004")
    resumed, _ = run(out, graph=resume_graph, iters=10, resume=True, checkpointer=dict(period=5))
    assert sorted(resumed) == list(range(5, 10))
    np.testing.assert_allclose(losses(resumed), losses(full)[5:], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(lrs(resumed), lrs(full)[5:], rtol=1e-6)


def test_a_graph_checkpoint_resumes_in_eager_mode(tmp_path):
    _resume_across(tmp_path, save_graph=True, resume_graph=False)


def test_an_eager_checkpoint_resumes_in_graph_mode(tmp_path):
    _resume_across(tmp_path, save_graph=False, resume_graph=True)


def test_activation_checkpointing_leaves_losses_unchanged(tmp_path, caplog):
    caplog.set_level("INFO", logger="libai")
    plain, _ = run(tmp_path / "plain", graph=True, iters=6)
    ckpt, _ = run(tmp_path / "ckpt", graph=True, iters=6, activation_checkpoint=dict(enabled=True))
    assert "Activation checkpointing on 2 blocks" in caplog.text
    np.testing.assert_allclose(losses(ckpt), losses(plain), rtol=RTOL, atol=ATOL)


def test_amp_on_the_cpu_says_what_precision_ran(tmp_path, caplog):
    caplog.set_level("WARNING", logger="libai")
    run(tmp_path / "amp", graph=False, iters=2, amp=dict(enabled=True))
    assert "AMP on the CPU" in caplog.text and "fp32" in caplog.text
