"""DefaultTrainer's one path for derived values (batch sizes reach the loader and config.yaml,
never the config), and the settings it wires to OneFlow: graph.debug, the NCCL fusion keys,
consumed_valid_samples, and weight formats registered by other packages."""
import os

import oneflow as flow
import pytest

from libai.config import LazyConfig
from libai.engine import DefaultTrainer
from libai.engine.graph import GraphBase, configure_collective_fusion
from libai.utils import weight_readers
from libai.utils.checkpoint_files import CheckpointError

from toy import toy_cfg


def test_resolved_batch_sizes_reach_the_loader_and_config_yaml_but_not_the_config(tmp_path):
    cfg = toy_cfg(str(tmp_path), train_micro_batch_size=4, num_accumulation_steps=3, global_batch_size=None,
                  train_iter=2, evaluation=dict(enabled=False))
    loader_node_before = dict(cfg.dataloader.train)
    trainer = DefaultTrainer(cfg)
    # The loader yields micro × accumulation samples per step on this (only) rank.
    batch = next(iter(trainer.train_loader))
    assert batch.get("inputs").tensor.shape[0] == 12
    assert trainer.plan.batch.global_batch_size == 12
    # The user's config is left as written: no resolved value is written back, no node changed.
    assert cfg.train.global_batch_size is None
    assert dict(cfg.dataloader.train) == loader_node_before
    assert "train_batch_size" not in cfg.dataloader.train
    assert cfg.train.dist.data_parallel_size is None and cfg.train.dist.device_type is None
    # The saved config records what ran.
    saved = LazyConfig.load(os.path.join(str(tmp_path), "config.yaml"))
    assert (saved.train.global_batch_size, saved.train.num_accumulation_steps) == (12, 3)
    assert (saved.train.dist.data_parallel_size, saved.train.dist.device_type) == (1, "cpu")


def test_build_train_loader_keeps_libais_classmethod_signature(tmp_path):
    class MyTrainer(DefaultTrainer):
        seen = []

        @classmethod
        def build_train_loader(cls, cfg, tokenizer=None):
            cls.seen.append(tokenizer)
            return super().build_train_loader(cfg, tokenizer)

    trainer = MyTrainer(toy_cfg(str(tmp_path), train_iter=1, evaluation=dict(enabled=False)))
    assert MyTrainer.seen == [None] and len(trainer.train_loader.dataset) == 64
    # Called on its own (outside a trainer), it resolves the sizes for the config's layout.
    loader, valid, test = DefaultTrainer.build_train_loader(toy_cfg(str(tmp_path), train_micro_batch_size=5))
    assert (valid, test) == (None, None)
    assert next(iter(loader)).get("inputs").tensor.shape[0] == 5


@pytest.mark.parametrize("level, expected", [(-1, []), (0, [0, 0])])
def test_graph_debug_switches_on_the_debug_output_of_every_graph(tmp_path, monkeypatch, level, expected):
    calls = []
    monkeypatch.setattr(GraphBase, "debug", lambda self, v_level=0, **kw: calls.append(v_level))
    cfg = toy_cfg(str(tmp_path), train_iter=1)
    cfg.graph.enabled = True
    cfg.graph.debug = level
    trainer = DefaultTrainer(cfg)
    assert trainer.graph_train is not None and trainer.graph_eval is not None
    assert calls == expected  # the training graph, then the evaluation graph


def test_nccl_fusion_settings_are_applied_on_cuda_only(monkeypatch, caplog):
    applied = []
    monkeypatch.setattr(flow.boxing.nccl, "set_fusion_threshold_mbytes", lambda v: applied.append(("mb", v)))
    monkeypatch.setattr(flow.boxing.nccl, "set_fusion_max_ops_num", lambda v: applied.append(("ops", v)))
    caplog.set_level("INFO", logger="libai.engine.graph")
    assert configure_collective_fusion(16, 24, "cuda") is True
    assert applied == [("mb", 16), ("ops", 24)]
    applied.clear()
    assert configure_collective_fusion(32, 8, "cpu") is False
    assert applied == []
    assert ("train.nccl_fusion_threshold_mb=32 and nccl_fusion_max_ops=8 are not applicable on 'cpu': "
            "they tune the NCCL collectives of CUDA graphs") in caplog.text


def test_a_graph_run_on_the_cpu_reports_the_fusion_settings_as_not_applicable(tmp_path, monkeypatch, caplog):
    applied = []
    monkeypatch.setattr(flow.boxing.nccl, "set_fusion_threshold_mbytes", applied.append)
    caplog.set_level("INFO", logger="libai.engine.graph")
    cfg = toy_cfg(str(tmp_path), train_iter=1, evaluation=dict(enabled=False), nccl_fusion_threshold_mb=64)
    cfg.graph.enabled = True
    DefaultTrainer(cfg)
    assert applied == [] and "nccl_fusion_threshold_mb=64" in caplog.text and "not applicable" in caplog.text


def test_a_nonzero_consumed_valid_samples_is_reported_as_having_no_effect(tmp_path, caplog):
    caplog.set_level("WARNING", logger="libai")
    DefaultTrainer(toy_cfg(str(tmp_path), train_iter=1, evaluation=dict(enabled=False)))
    assert "consumed_valid_samples" not in caplog.text
    DefaultTrainer(toy_cfg(str(tmp_path), train_iter=1, evaluation=dict(enabled=False), consumed_valid_samples=64))
    assert ("train.consumed_valid_samples=64 has no effect: every evaluation reads each test set from "
            "its first sample") in caplog.text


def test_train_load_weight_goes_through_a_registered_reader(tmp_path, monkeypatch):
    monkeypatch.setattr(weight_readers, "_READERS", [])
    loaded = []
    weight_readers.register_weight_reader("test format", lambda p: p.endswith(".test"),
                                          lambda model, path: loaded.append((type(model).__name__, path)))
    weight_readers.register_weight_reader("test format", lambda p: p.endswith(".other"),
                                          lambda model, path: loaded.append(("replaced", path)))
    assert weight_readers.registered_weight_readers() == ["test format"]  # replaced by name
    trainer = DefaultTrainer(toy_cfg(str(tmp_path / "a"), train_iter=1, evaluation=dict(enabled=False),
                                     load_weight="weights.other"))
    trainer.resume_or_load(resume=False)
    assert loaded == [("replaced", "weights.other")]
    # A path no reader claims is a libai checkpoint.
    missing = str(tmp_path / "nowhere")
    with pytest.raises(CheckpointError, match=f"no checkpoint at {missing}: it does not exist"):
        weight_readers.load_weight(trainer.model, missing, trainer.checkpointer)
