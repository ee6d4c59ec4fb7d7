"""Checkpoints in upstream LiBai's layout: read (model, optimizer, scheduler, iteration), told
apart from an interrupted save of ours, and written back by the exporter.

The LiBai checkpoints here are written by the tests themselves from LiBai's published layout:
``save_dir/<name>/`` with one ``flow.save`` directory per registered object (``model``;
``optimizer`` in eager mode or ``graph`` in graph mode; ``lr_scheduler``), no manifest, the
iteration only in the name, and ``save_dir/last_checkpoint`` naming the newest. The schedules
are built the way LiBai's ``WarmupCosineLR`` builds them (OneFlow's ``WarmupLR`` around
``CosineDecayLR``; the bare ``CosineDecayLR`` when there is no warmup).
"""
import os
import re

import numpy as np
import oneflow as flow
import pytest

from libai.config import LazyCall
from libai.models import GPTForPreTraining, GPTModel
from libai.models.utils.model_loader import GPT2LoaderLiBai
from libai.scheduler import WarmupCosineLR
from libai.utils.checkpoint import Checkpointer, CheckpointError
from libai.utils.checkpoint_convert import export_to_libai_upstream
from libai.utils.checkpoint_files import verify_checkpoint
from libai.utils.checkpoint_upstream import to_libai_names, to_model_names
from libai.utils.weight_readers import load_weight

CFG = dict(vocab_size=40, hidden_size=16, hidden_layers=1, num_attention_heads=2,
           intermediate_size=32, max_seq_length=12, embedding_dropout_prob=0.0,
           attention_dropout_prob=0.0, hidden_dropout_prob=0.0, initializer_range=0.2)
# LiBai's names of a one-layer GPTForPreTraining's tensors, in its order (its published layout)
LIBAI_GPT_KEYS = [
    "GPT_model.embeddings.token_embeddings.weight",
    "GPT_model.embeddings.position_embeddings.weight",
] + [f"GPT_model.transformer.layers.0.{name}" for name in (
    "input_layernorm.weight", "input_layernorm.bias",
    "self_attention.query_key_value.weight", "self_attention.query_key_value.bias",
    "self_attention.dense.weight", "self_attention.dense.bias",
    "post_attention_layernorm.weight", "post_attention_layernorm.bias",
    "mlp.dense_h_to_4h.weight", "mlp.dense_h_to_4h.bias",
    "mlp.dense_4h_to_h.weight", "mlp.dense_4h_to_h.bias")] + [
    "GPT_model.transformer.layernorm_f.weight", "GPT_model.transformer.layernorm_f.bias"]
IDS = np.random.RandomState(0).randint(0, CFG["vocab_size"], size=(2, 6))


def logits(model):
    model.eval()
    with flow.no_grad():
        return model(flow.tensor(IDS))["prediction_scores"].numpy()


def libai_schedule(optimizer, warmup_iter=2, max_iter=10):
    """LiBai's WarmupCosineLR(optimizer, max_iter, 0.001, warmup_iter, alpha=0.01), as it
    builds it from OneFlow's schedulers."""
    decay = flow.optim.lr_scheduler.CosineDecayLR(optimizer, decay_steps=max_iter, alpha=0.01)
    if warmup_iter == 0:
        return decay
    return flow.optim.lr_scheduler.WarmupLR(decay, warmup_factor=0.001, warmup_iters=warmup_iter,
                                            warmup_method="linear")


def trained_run(seed=0, steps=5, warmup_iter=2):
    """A GPT trained ``steps`` iterations by an AdamW and a LiBai schedule."""
    flow.manual_seed(seed)
    model = GPTForPreTraining(CFG)
    optimizer = flow.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
    scheduler = libai_schedule(optimizer, warmup_iter)
    labels = flow.tensor(np.roll(IDS, 1, axis=1))
    for _ in range(steps):
        model.train()
        loss = model(flow.tensor(IDS), labels)["lm_loss"]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()
    return model, optimizer, scheduler


def with_libai_names(state):
    """Our GPT state dict under LiBai's names (same tensors, same order)."""
    assert len(state) == len(LIBAI_GPT_KEYS)
    return dict(zip(LIBAI_GPT_KEYS, state.values()))


def save(state, path):
    """LiBai's ``flow.save(state, path, global_dst_rank=0)``: global tensors gathered on rank 0."""
    flow.save(state, path, global_dst_rank=0)


def write_libai_checkpoint(save_dir, name, model, optimizer=None, scheduler=None, graph=None):
    """What LiBai's Checkpointer.save(name) writes, and its last_checkpoint."""
    path = os.path.join(save_dir, name)
    os.makedirs(path)
    save(with_libai_names(model.state_dict()), os.path.join(path, "model"))
    if optimizer is not None:
        save(optimizer.state_dict(), os.path.join(path, "optimizer"))
    if graph is not None:
        save(graph, os.path.join(path, "graph"))
    if scheduler is not None:
        save(scheduler.state_dict(), os.path.join(path, "lr_scheduler"))
    with open(os.path.join(save_dir, "last_checkpoint"), "w") as f:
        f.write(name)
    return path


def fresh_run(seed=7, warmup_iter=2):
    flow.manual_seed(seed)
    model = GPTForPreTraining(CFG)
    optimizer = flow.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
    scheduler = WarmupCosineLR(optimizer, max_iter=10, warmup_factor=0.001,
                               warmup_iter=warmup_iter, alpha=0.01)
    return model, optimizer, scheduler


def assert_same_moments(ours, theirs):
    a, b = ours.state_dict()["state"], theirs.state_dict()["state"]
    assert a["step"] == b["step"]
    for index in range(len(list(ours.param_groups[0].parameters))):
        for slot in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_array_equal(a[index][slot].numpy(), b[index][slot].numpy())


def assert_same_schedule(my_opt, my_sched, optimizer, scheduler, steps):
    """Our schedule gives LiBai's learning rate at each of the next ``steps`` steps."""
    for _ in range(steps):
        assert my_opt.param_groups[0]["lr"] == pytest.approx(optimizer.param_groups[0]["lr"], rel=1e-12)
        my_sched.step()
        scheduler.step()


# ---------------------------------------------------------------------------------------------
# LiBai -> libai
# ---------------------------------------------------------------------------------------------
def test_an_eager_libai_checkpoint_resumes_model_optimizer_schedule_and_iteration(tmp_path, local_layout):
    model, optimizer, scheduler = trained_run()
    write_libai_checkpoint(str(tmp_path), "model_0000004", model, optimizer, scheduler)
    mine, my_opt, my_sched = fresh_run()
    checkpointer = Checkpointer(mine, str(tmp_path), optimizer=my_opt, lr_scheduler=my_sched)
    assert checkpointer.resume_or_load(None) == {"iteration": 4, "iter": 4}
    report = checkpointer.last_load_report
    assert report.format == "libai-upstream"
    assert report.loaded_parts == ["model", "optimizer", "lr_scheduler"]
    assert sorted(report.renamed_keys) == sorted([LIBAI_GPT_KEYS[0]] + LIBAI_GPT_KEYS[-2:])
    assert report.missing_keys == [] and report.unexpected_keys == []
    np.testing.assert_array_equal(logits(mine), logits(model))
    assert_same_moments(my_opt, optimizer)
    # the schedule continues where LiBai's stood, and on, step for step
    assert my_sched.last_step == scheduler.last_step == 5
    assert_same_schedule(my_opt, my_sched, optimizer, scheduler, steps=4)


def test_a_graph_mode_libai_checkpoint_restores_the_optimizer_by_parameter_name(tmp_path, local_layout):
    model, optimizer, scheduler = trained_run()
    theirs = with_libai_names(model.state_dict())
    state = optimizer.state_dict()["state"]
    step = flow.tensor([5], dtype=flow.int64).to_global(
        placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.broadcast)
    graph = {"model": theirs, "System-Train-TrainStep": step}
    for index, name in enumerate(theirs):  # AdamW numbers parameters in model order here
        graph[f"model.{name}-m"] = state[index]["exp_avg"]
        graph[f"model.{name}-v"] = state[index]["exp_avg_sq"]
    write_libai_checkpoint(str(tmp_path), "model_0000004", model, scheduler=scheduler, graph=graph)
    mine, my_opt, my_sched = fresh_run()
    extra = Checkpointer(mine, str(tmp_path), optimizer=my_opt, lr_scheduler=my_sched).resume_or_load(None)
    assert extra["iteration"] == 4
    np.testing.assert_array_equal(logits(mine), logits(model))
    assert_same_moments(my_opt, optimizer)


def test_model_final_takes_its_iteration_from_the_schedule(tmp_path, local_layout):
    model, optimizer, scheduler = trained_run(steps=6)
    path = write_libai_checkpoint(str(tmp_path), "model_final", model, optimizer, scheduler)
    mine, my_opt, my_sched = fresh_run()
    assert Checkpointer(mine, optimizer=my_opt, lr_scheduler=my_sched).load(path)["iteration"] == 5


def test_a_schedule_without_warmup_loads_into_our_one_phase_schedule(tmp_path, local_layout):
    model, optimizer, scheduler = trained_run(warmup_iter=0)
    assert isinstance(scheduler, flow.optim.lr_scheduler.CosineDecayLR)  # LiBai's bare decay
    path = write_libai_checkpoint(str(tmp_path), "model_0000004", model, optimizer, scheduler)
    mine, my_opt, my_sched = fresh_run(warmup_iter=0)
    Checkpointer(mine, optimizer=my_opt, lr_scheduler=my_sched).load(path)
    assert_same_schedule(my_opt, my_sched, optimizer, scheduler, steps=3)


def test_weights_load_through_load_weight_and_gpt2_loader(tmp_path, local_layout):
    model, optimizer, scheduler = trained_run()
    path = write_libai_checkpoint(str(tmp_path), "model_0000004", model, optimizer, scheduler)
    expected = logits(model)
    for source in (path, os.path.join(path, "model")):  # LiBai's loader takes the model part
        fresh, _, _ = fresh_run()
        load_weight(fresh, source, Checkpointer(fresh))
        np.testing.assert_array_equal(logits(fresh), expected)
        loaded, info = GPT2LoaderLiBai(GPTForPreTraining, CFG, source, output_loading_info=True).load()
        np.testing.assert_array_equal(logits(loaded), expected)
        assert info["missing_keys"] == [] and info["unexpected_keys"] == []
    # a GPTModel's weights (no "GPT_model." prefix) into GPTForPreTraining, as LiBai's loader allows
    base = str(tmp_path / "base")
    save({k[len("GPT_model."):]: v for k, v in with_libai_names(model.state_dict()).items()}, base)
    loaded = GPT2LoaderLiBai(GPTForPreTraining, CFG, base).load()
    np.testing.assert_array_equal(logits(loaded), expected)
    # a LazyCall node is built with libai_cfg as its cfg, as LiBai's loader does
    node = LazyCall(GPTForPreTraining)(cfg=dict(CFG, hidden_size=8))
    np.testing.assert_array_equal(logits(GPT2LoaderLiBai(node, CFG, path).load()), expected)
    bare = GPT2LoaderLiBai(GPTModel, CFG, os.path.join(path, "model")).load()
    bare.eval()
    with flow.no_grad():
        np.testing.assert_array_equal(bare(flow.tensor(IDS)).numpy(), expected)


def test_an_optimizer_that_does_not_fit_is_refused_naming_the_format(tmp_path, local_layout):
    model, optimizer, scheduler = trained_run()
    path = write_libai_checkpoint(str(tmp_path), "model_0000004", model, optimizer, scheduler)
    mine, _, _ = fresh_run()
    params = list(mine.parameters())
    two_groups = flow.optim.AdamW([{"params": params[:3]}, {"params": params[3:]}], lr=0.01)
    with pytest.raises(CheckpointError, match=r"cannot restore 'optimizer' from .*LiBai Checkpointer "
                                              r"checkpoint.*parameter groups of sizes \[16\], this optimizer \[3, 13\]"):
        Checkpointer(mine, optimizer=two_groups).load(path)


# ---------------------------------------------------------------------------------------------
# Telling formats apart
# ---------------------------------------------------------------------------------------------
def test_an_interrupted_save_and_libai_checkpoints_each_get_their_own_message(tmp_path, local_layout):
    model, optimizer, scheduler = trained_run(steps=1)
    checkpointer = Checkpointer(model, str(tmp_path / "ours"), optimizer=optimizer)
    ours = checkpointer.save("model_0000001", iteration=1)
    os.remove(os.path.join(ours, "manifest.json"))  # as if the save had stopped before its end
    interrupted = r"incomplete libai checkpoint: a save was interrupted before it finished"
    with pytest.raises(CheckpointError, match=re.escape(ours) + ".*" + interrupted):
        checkpointer.load(ours)
    tmp = tmp_path / "ours" / ".tmp-model_0000002-123"
    os.makedirs(tmp / "model")
    with pytest.raises(CheckpointError, match=interrupted):
        checkpointer.load(str(tmp))

    libai_dir = str(tmp_path / "libai")
    good = write_libai_checkpoint(libai_dir, "model_0000004", model, optimizer, scheduler)
    with pytest.raises(CheckpointError, match="is a LiBai Checkpointer checkpoint .*Checkpointer.load reads it"):
        verify_checkpoint(good)  # the manifest check names the format it saw instead
    unfinished = os.path.join(libai_dir, "model_0000005")
    os.makedirs(os.path.join(unfinished, "optimizer"))  # LiBai died while saving this part
    save(with_libai_names(model.state_dict()), os.path.join(unfinished, "model"))
    with pytest.raises(CheckpointError, match=r"looks like a LiBai Checkpointer checkpoint.*"
                                              r"\['optimizer'\] have no pickled_data: LiBai's save"):
        checkpointer.load(unfinished)
    no_model = os.path.join(libai_dir, "model_0000006")
    os.makedirs(no_model)
    save(scheduler.state_dict(), os.path.join(no_model, "lr_scheduler"))
    with pytest.raises(CheckpointError, match=r"LiBai Checkpointer checkpoint.*no 'model' part"):
        checkpointer.load(no_model)
    with pytest.raises(CheckpointError, match=r"is a save_dir, not a checkpoint \(its last_checkpoint "
                                              r"names 'model_0000004'\)"):
        checkpointer.load(libai_dir)


# ---------------------------------------------------------------------------------------------
# libai -> LiBai
# ---------------------------------------------------------------------------------------------
def test_the_export_has_libai_layout_and_reads_back(tmp_path, local_layout):
    model, optimizer, _ = trained_run()
    scheduler = WarmupCosineLR(optimizer, max_iter=10, warmup_factor=0.001, warmup_iter=2, alpha=0.01)
    for _ in range(5):
        scheduler.step()
    run = str(tmp_path / "run")
    Checkpointer(model, run, optimizer=optimizer, lr_scheduler=scheduler).save("model_0000004", iteration=4)
    dst = str(tmp_path / "libai_output")
    path = export_to_libai_upstream(run, dst)  # a save_dir: its last checkpoint
    assert path == os.path.join(dst, "model_0000004")
    assert sorted(os.listdir(path)) == ["graph", "lr_scheduler", "model", "optimizer"]
    with open(os.path.join(dst, "last_checkpoint")) as f:
        assert f.read() == "model_0000004"
    assert list(flow.load(os.path.join(path, "model"))) == LIBAI_GPT_KEYS
    graph = flow.load(os.path.join(path, "graph"))
    assert list(graph["model"]) == LIBAI_GPT_KEYS
    state = optimizer.state_dict()["state"]
    np.testing.assert_array_equal(graph["model.GPT_model.embeddings.token_embeddings.weight-m"].numpy(),
                                  state[0]["exp_avg"].numpy())
    np.testing.assert_array_equal(graph["model.GPT_model.transformer.layernorm_f.bias-v"].numpy(),
                                  state[15]["exp_avg_sq"].numpy())
    assert graph["System-Train-TrainStep"].numpy().tolist() == [5]
    saved_schedule = flow.load(os.path.join(path, "lr_scheduler"))
    assert saved_schedule["last_step"] == 5 and len(saved_schedule["schedulers"]) == 2
    # and it reads back, through the LiBai path, to the same model, moments and iteration
    mine, my_opt, my_sched = fresh_run()
    checkpointer = Checkpointer(mine, dst, optimizer=my_opt, lr_scheduler=my_sched)
    assert checkpointer.resume_or_load(None)["iteration"] == 4
    assert checkpointer.last_load_report.format == "libai-upstream"
    np.testing.assert_array_equal(logits(mine), logits(model))
    assert_same_moments(my_opt, optimizer)
    assert my_sched.get_last_lr() == pytest.approx(scheduler.get_last_lr(), rel=1e-12)


def test_the_convert_command(tmp_path, local_layout, capsys):
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
    import convert_checkpoint

    model, optimizer, _ = trained_run(steps=1)
    ours = Checkpointer(model, str(tmp_path / "run"), optimizer=optimizer).save("model_best", iteration=0)
    dst = str(tmp_path / "out")
    assert convert_checkpoint.main(["--to", "libai-upstream", ours, dst]) == 0
    assert capsys.readouterr().out.strip() == os.path.join(dst, "model_0000000")
    # LiBai's layout is not a source: it loads as it is
    assert convert_checkpoint.main(["--to", "libai-upstream", os.path.join(dst, "model_0000000"),
                                    str(tmp_path / "again")]) == 2
    assert "already in LiBai's layout" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Names of other families
# ---------------------------------------------------------------------------------------------
# LiBai's names of a one-layer BertForPreTraining (its published layout), as a set
LIBAI_BERT_KEYS = {
    "bert.embeddings.vocab_embeddings.weight", "bert.embeddings.position_embeddings.weight",
    "bert.embeddings.tokentype_embeddings.weight", "bert.final_layernorm.weight",
    "bert.final_layernorm.bias", "bert.pooler.dense.weight", "bert.pooler.dense.bias",
    "cls_head.predictions.dense.weight", "cls_head.predictions.dense.bias",
    "cls_head.predictions.layernorm.weight", "cls_head.predictions.layernorm.bias",
    "cls_head.seq_relationship.weight", "cls_head.seq_relationship.bias", "cls_head.lm_logits.bias",
} | {f"bert.encoders.0.{name}" for name in (
    "input_layernorm.weight", "input_layernorm.bias", "self_attention.query_key_value.weight",
    "self_attention.query_key_value.bias", "self_attention.dense.weight", "self_attention.dense.bias",
    "post_attention_layernorm.weight", "post_attention_layernorm.bias", "mlp.dense_h_to_4h.weight",
    "mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.weight", "mlp.dense_4h_to_h.bias")}


def test_bert_names_map_both_ways(local_layout):
    from libai.models import BertForPreTraining

    model = BertForPreTraining(dict(vocab_size=40, hidden_size=16, hidden_layers=1,
                                    num_attention_heads=2, intermediate_size=32,
                                    max_position_embeddings=12))
    own = model.state_dict()
    theirs = to_libai_names(own, "bert")
    assert set(theirs) == LIBAI_BERT_KEYS
    back, renamed = to_model_names(theirs, own)
    assert set(back) == set(own) and len(renamed) == len(set(LIBAI_BERT_KEYS) - set(own))


def test_swin_qkv_rows_are_regrouped_both_ways(tmp_path, local_layout):
    """LiBai's Swin orders the fused q/k/v rows [q|k|v][head][dim] and stores its position-index
    buffers; libai's orders them [head][q|k|v][dim]."""
    from libai.models import SwinTransformer

    def swin():
        return SwinTransformer(img_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                               num_heads=[2, 2], window_size=4, num_classes=10, drop_path_rate=0.0)

    flow.manual_seed(0)
    model = swin()
    images = flow.tensor(np.random.RandomState(0).randn(2, 3, 32, 32).astype(np.float32))

    def outputs(m):
        m.eval()
        with flow.no_grad():
            return m(images)["prediction_scores"].numpy()

    theirs = {}
    for key, value in model.state_dict().items():
        value = value.numpy()
        if key.endswith("attn.qkv.weight") or key.endswith("attn.qkv.bias"):
            heads, rest = 2, value.shape[1:]  # [head][qkv][dim] -> [qkv][head][dim]
            value = value.reshape((heads, 3, -1) + rest).swapaxes(0, 1).reshape(value.shape)
        theirs[key] = flow.tensor(value)
    for layer in (0, 1):
        theirs[f"layers.{layer}.blocks.0.attn.relative_position_index"] = flow.zeros(16, 16, dtype=flow.int64)
    path = str(tmp_path / "libai" / "model_0000000")
    os.makedirs(path)
    flow.save(theirs, os.path.join(path, "model"))
    flow.manual_seed(1)
    mine = swin()
    Checkpointer(mine).load(path)
    np.testing.assert_allclose(outputs(mine), outputs(model), rtol=1e-6, atol=1e-6)

    run = str(tmp_path / "run")
    Checkpointer(model, run).save("model_0000000", iteration=0)
    exported = flow.load(os.path.join(export_to_libai_upstream(run, str(tmp_path / "out")), "model"))
    for key in ("layers.0.blocks.0.attn.qkv.weight", "layers.1.blocks.0.attn.qkv.bias"):
        np.testing.assert_array_equal(exported[key].numpy(), theirs[key].numpy())
    index = exported["layers.0.blocks.0.attn.relative_position_index"].numpy()
    assert index.shape == (16, 16) and index[0, 0] == 24 and index.max() == 48  # (2W-1)^2 - 1
