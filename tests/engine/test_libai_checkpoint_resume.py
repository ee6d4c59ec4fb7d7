"""``--resume`` from a checkpoint in upstream LiBai's layout continues the run: the iteration from
the checkpoint's name, the optimizer and the schedule from its parts, and the data position by
LiBai's rule (iterations done x global batch), since LiBai saves no sampler state.

The LiBai-layout directory is written the way LiBai's Checkpointer writes one: a ``flow.save``
of each object's state dict (``model``, ``optimizer``, ``lr_scheduler``), no manifest, and
``last_checkpoint`` naming it. The states come from a libai run stopped at the same iteration.
"""
import os

import numpy as np
import oneflow as flow

from libai.config import LazyCall

from toy import BlockModel, recorded_trainer, toy_cfg


def run(out, iters=10, resume=False):
    cfg = toy_cfg(str(out), model=LazyCall(BlockModel)(), n=128, train_iter=iters,
                  checkpointer=dict(period=5, max_to_keep=5))
    cfg.graph.enabled = False
    cfg.train.evaluation.enabled = False
    cfg.train.warmup_ratio = 0.1
    trainer, store = recorded_trainer(cfg, resume=resume)
    start, consumed = trainer.start_iter, trainer.consumed_train_samples
    trainer.train()
    return store, start, consumed


def test_resuming_a_libai_layout_checkpoint_continues_the_run(tmp_path):
    full, _, _ = run(tmp_path / "full")
    ours = tmp_path / "full" / "model_0000004"
    libai_dir = tmp_path / "libai_run"
    for part in ("model", "optimizer", "lr_scheduler"):
        flow.save(flow.load(str(ours / part)), str(libai_dir / "model_0000004" / part))
    (libai_dir / "last_checkpoint").write_text("model_0000004")
    assert sorted(os.listdir(libai_dir / "model_0000004")) == ["lr_scheduler", "model", "optimizer"]

    resumed, start, consumed = run(libai_dir, resume=True)
    assert start == 5 and consumed == 5 * 8  # five iterations of global batch 8, LiBai's rule
    assert sorted(resumed) == list(range(5, 10))
    ordered = sorted(full)
    np.testing.assert_allclose([resumed[i][0] for i in range(5, 10)],
                               [full[i][0] for i in ordered[5:]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([resumed[i][1] for i in range(5, 10)],
                               [full[i][1] for i in ordered[5:]], rtol=1e-9)
