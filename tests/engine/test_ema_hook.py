"""EMAHook: the average equals a NumPy recurrence over the trained weights, resumes exactly
from a checkpoint, swaps in and out for evaluation, and is the same in Graph and Eager mode."""
import os
import shutil

import numpy as np
import oneflow as flow
import pytest

from libai.engine import DefaultTrainer
from libai.engine.hooks.ema import EMAHook
from libai.engine.trainer import HookBase
from libai.utils.checkpoint import Checkpointer

from toy import ToyModel, toy_cfg

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class WeightRecorder(HookBase):
    """Copies every parameter to NumPy at the start and after each step."""

    def __init__(self) -> None:
        self.initial = {}
        self.after_steps = []

    def _snapshot(self):
        return {n: p.detach().numpy().copy() for n, p in self.trainer.model.named_parameters()}

    def before_train(self):
        self.initial = self._snapshot()

    def after_step(self):
        self.after_steps.append(self._snapshot())


def numpy_ema(initial, steps, decay, warmup):
    """The reference: ema_t = d_t * ema_{t-1} + (1 - d_t) * w_t, written out independently."""
    ema = {n: v.astype(np.float64) for n, v in initial.items()}
    for t, weights in enumerate(steps):
        d = min(decay, (1 + t) / (10 + t)) if warmup else decay
        ema = {n: d * ema[n] + (1 - d) * weights[n] for n in ema}
    return ema


def train_with_ema(out_dir, graph=False, train_iter=6, **ema_kwargs):
    cfg = toy_cfg(str(out_dir), train_iter=train_iter, evaluation=dict(enabled=False))
    # No clipping: Eager clips by the norm of all parameters, Graph per parameter group, and
    # this file compares the two modes' averages, not their clipping.
    cfg.optim.params.clip_grad_max_norm = None
    cfg.graph.enabled = graph
    trainer = DefaultTrainer(cfg)
    ema = EMAHook(trainer.model, **ema_kwargs)
    recorder = WeightRecorder()
    trainer.register_hooks([ema, recorder], after="LRScheduler")
    trainer.resume_or_load(resume=False)
    trainer.train()
    return trainer, ema, recorder


def ema_numpy(hook):
    return {n: t.numpy().copy() for n, t in hook.ema_state_dict().items()}


@pytest.mark.parametrize("warmup", [True, False])
def test_ema_after_k_steps_equals_the_numpy_recurrence(tmp_path, warmup):
    trainer, ema, rec = train_with_ema(tmp_path, decay=0.8, warmup=warmup)
    assert ema.num_updates == len(rec.after_steps) == 6
    expected = numpy_ema(rec.initial, rec.after_steps, decay=0.8, warmup=warmup)
    got = ema_numpy(ema)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
        # the average lags the weights: it is neither the first nor the last weights
        assert not np.allclose(got[name], rec.after_steps[-1][name], atol=1e-6)


def test_checkpoint_round_trip_restores_the_average_and_the_next_update_matches(tmp_path):
    trainer, ema, _ = train_with_ema(tmp_path / "run", decay=0.9)
    Checkpointer(trainer.model, str(tmp_path / "ck"), ema=ema).save("ema_test", iteration=5)

    flow.manual_seed(7)  # a differently initialised model and a fresh hook
    model = ToyModel()
    restored = EMAHook(model, decay=0.9)
    Checkpointer(model, str(tmp_path / "ck"), ema=restored).load("ema_test")
    assert restored.num_updates == ema.num_updates == 6
    before = ema_numpy(ema)
    for name, value in ema_numpy(restored).items():
        np.testing.assert_array_equal(value, before[name])

    # Both models now hold the same weights; one more update must agree exactly, which also
    # needs the warm-up counter restored (decay 0.9 vs (1 + 6) / 16 for a fresh counter).
    ema.update()
    restored.update()
    for name, value in ema_numpy(restored).items():
        np.testing.assert_array_equal(value, ema_numpy(ema)[name])
        assert not np.array_equal(value, before[name])


def test_resumed_training_gives_the_same_average_as_an_uninterrupted_run(tmp_path):
    _, full, _ = train_with_ema(tmp_path / "full", decay=0.9)
    # Resume a second run from the uninterrupted run's checkpoint of iteration 2 (period 3):
    # the hook's state rides in the trainer part of the checkpoint.
    half = tmp_path / "half"
    shutil.copytree(tmp_path / "full" / "model_0000002", half / "model_0000002")
    (half / "last_checkpoint").write_text("model_0000002")
    cfg = toy_cfg(str(half), train_iter=6, evaluation=dict(enabled=False))
    cfg.optim.params.clip_grad_max_norm = None  # as in train_with_ema
    trainer = DefaultTrainer(cfg)
    resumed = EMAHook(trainer.model, decay=0.9)
    trainer.register_hooks([resumed], after="LRScheduler")
    trainer.resume_or_load(resume=True)
    assert trainer.start_iter == 3 and resumed.num_updates == 3
    trainer.train()
    assert resumed.num_updates == 6
    expected = ema_numpy(full)
    for name, value in ema_numpy(resumed).items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-6, atol=1e-7, err_msg=name)


def test_apply_to_model_swaps_in_the_average_and_restores_the_weights_exactly(tmp_path):
    trainer, ema, _ = train_with_ema(tmp_path, decay=0.9)
    model = trainer.model.eval()
    live = {n: t.numpy().copy() for n, t in model.state_dict().items()}
    x = flow.randn(5, 4)
    b = flow.sbp.broadcast
    placed = trainer.layout.to_global(x, [b, b])  # the trained model is global, as in LiBai

    reference = ToyModel().eval()  # a plain local copy
    reference.load_state_dict({n: t.to_local() for n, t in ema.ema_state_dict().items()})
    with ema.apply_to_model() as swapped:
        assert swapped is model
        for name, tensor in model.state_dict().items():
            np.testing.assert_array_equal(tensor.numpy(), ema_numpy(ema)[name])
        np.testing.assert_array_equal(model(placed)["prediction_scores"].numpy(),
                                      reference(x)["prediction_scores"].numpy())
    for name, tensor in model.state_dict().items():
        np.testing.assert_array_equal(tensor.numpy(), live[name])

    with pytest.raises(RuntimeError, match="evaluation failed"):
        with ema.apply_to_model():
            raise RuntimeError("evaluation failed")
    for name, tensor in model.state_dict().items():
        np.testing.assert_array_equal(tensor.numpy(), live[name])


def test_an_evaluation_graph_sees_the_swapped_weights(tmp_path):
    from libai.models.utils import GraphBase

    trainer, ema, _ = train_with_ema(tmp_path, decay=0.9)
    graph = GraphBase(trainer.model, is_train=False)
    x = flow.randn(5, 4)
    live_out = graph(inputs=x)["prediction_scores"].numpy()
    reference = ToyModel().eval()  # a plain local copy
    reference.load_state_dict({n: t.to_local() for n, t in ema.ema_state_dict().items()})
    with ema.evaluation_context():
        ema_out = graph(inputs=x)["prediction_scores"].numpy()
    np.testing.assert_allclose(ema_out, reference(x)["prediction_scores"].numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(ema_out, live_out, atol=1e-4)
    np.testing.assert_allclose(graph(inputs=x)["prediction_scores"].numpy(), live_out, rtol=1e-6)


def test_graph_mode_training_gives_the_same_average_as_eager(tmp_path):
    _, eager, eager_rec = train_with_ema(tmp_path / "eager", graph=False, train_iter=4, decay=0.7)
    _, graph, graph_rec = train_with_ema(tmp_path / "graph", graph=True, train_iter=4, decay=0.7)
    # The graph updated the eager module's parameters in place, and the hook saw each update.
    assert not np.array_equal(graph_rec.after_steps[-1]["net.0.weight"], graph_rec.initial["net.0.weight"])
    expected = ema_numpy(eager)
    for name, value in ema_numpy(graph).items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-4, atol=1e-5, err_msg=name)
    reference = numpy_ema(graph_rec.initial, graph_rec.after_steps, decay=0.7, warmup=True)
    for name, value in ema_numpy(graph).items():
        np.testing.assert_allclose(value, reference[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_buffers_are_copied_not_averaged():
    model = flow.nn.Sequential(flow.nn.Linear(3, 3), flow.nn.BatchNorm1d(3))
    ema = EMAHook(model, decay=0.5, warmup=False)
    ema.before_train()
    model.train()
    model(flow.randn(8, 3) * 5 + 2)  # moves the running statistics
    with flow.no_grad():
        model[0].weight.add_(1.0)
    old_weight = ema.ema_state_dict()["0.weight"].numpy().copy()
    ema.update()
    state = ema.ema_state_dict()
    for name in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        np.testing.assert_array_equal(state[name].numpy(), dict(model.named_buffers())[name].numpy())
    np.testing.assert_allclose(state["0.weight"].numpy(),
                               0.5 * old_weight + 0.5 * model[0].weight.numpy(), rtol=1e-6)


def test_global_parameters_keep_placement_and_sbp_through_update_and_checkpoint(tmp_path):
    placement = flow.placement("cpu", ranks=[0])
    flow.manual_seed(3)
    model = flow.nn.Linear(4, 6).to_global(placement=placement, sbp=flow.sbp.split(0))
    ema = EMAHook(model, decay=0.6, warmup=False)
    ema.before_train()
    start = model.weight.numpy().copy()
    with flow.no_grad():
        model.weight.mul_(2.0)
    ema.update()
    weight = ema.ema_state_dict()["weight"]
    assert weight.is_global and weight.placement == placement and weight.sbp == model.weight.sbp
    np.testing.assert_allclose(weight.numpy(), 0.6 * start + 0.4 * 2.0 * start, rtol=1e-6)

    # What the Checkpointer does with a part holding global tensors: gather and save on rank 0;
    # one process loads the full values back as local tensors, re-split by load_state_dict.
    flow.save(ema.state_dict(), str(tmp_path / "ema"), global_dst_rank=0)
    other = flow.nn.Linear(4, 6).to_global(placement=placement, sbp=flow.sbp.split(0))
    restored = EMAHook(other, decay=0.6, warmup=False)
    state = flow.load(str(tmp_path / "ema"))
    assert not state["weights"]["weight"].is_global
    restored.load_state_dict(state)
    assert restored.num_updates == 1
    loaded = restored.ema_state_dict()["weight"]
    assert loaded.is_global and loaded.sbp == model.weight.sbp
    np.testing.assert_array_equal(loaded.numpy(), weight.numpy())


def test_config_aliases_of_the_train_framework():
    model = ToyModel()
    assert EMAHook.from_config(model, {"enabled": False, "decay": 0.99}) is None
    assert EMAHook.from_config(model, {"enabled": True, "decay": 0.99}).decay == 0.99
    # The merged config always holds the libai keys; the aliases, when present, win.
    hook = EMAHook.from_config(model, {"enabled": False, "decay": 0.9999, "enable": True, "decay_rate": 0.95})
    assert hook is not None and hook.decay == 0.95
    assert EMAHook.from_config(model, {"enabled": True, "enable": False}) is None
    # An alias left at None (e.g. declared in the defaults) defers to the libai key.
    hook = EMAHook.from_config(model, {"enabled": True, "decay": 0.99, "enable": None, "decay_rate": None})
    assert hook is not None and hook.decay == 0.99
    assert EMAHook(model, decay_rate=0.9).decay == 0.9
    assert EMAHook(model).decay == 0.9999


def test_bad_settings_are_refused_with_the_fix():
    model = ToyModel()
    with pytest.raises(ValueError, match=r"decay=0.9 and decay_rate=0.8.*give only one"):
        EMAHook(model, decay=0.9, decay_rate=0.8)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\), got 1.0.*freeze"):
        EMAHook(model, decay=1.0)
    with pytest.raises(TypeError, match="needs the oneflow.nn.Module"):
        EMAHook({"weight": flow.ones(2)})


def test_a_state_for_another_model_is_refused():
    ema = EMAHook(ToyModel(hidden=8))
    other = EMAHook(ToyModel(hidden=5))
    with pytest.raises(ValueError, match=r"EMA weight 'net.0.weight' has shape \(5, 4\).*\(8, 4\)"):
        ema.load_state_dict(other.state_dict())
    bigger = EMAHook(flow.nn.Sequential(flow.nn.Linear(4, 8)))
    with pytest.raises(ValueError, match=r"missing \['0.bias', '0.weight'\].*another model"):
        bigger.load_state_dict({"weights": {"other": flow.ones(1)}})


TWO_RANK_SCRIPT = '''
import sys
import libai
import numpy as np
import oneflow as flow
from libai.engine.hooks.ema import EMAHook
from libai.utils import distributed as dist
from libai.utils.checkpoint import Checkpointer

out = sys.argv[1]
placement = flow.placement("cpu", ranks=[0, 1])
flow.manual_seed(0)
model = flow.nn.Linear(4, 6).to_global(placement=placement, sbp=flow.sbp.split(0))
ema = EMAHook(model, decay=0.6, warmup=False)
ema.before_train()
start = dist.tton(model.weight)
with flow.no_grad():
    model.weight.mul_(2.0)
ema.update()
averaged = ema.ema_state_dict()["weight"]
assert averaged.sbp == model.weight.sbp and averaged.placement == placement
err_update = np.abs(dist.tton(averaged) - (0.6 * start + 0.4 * 2.0 * start)).max()

Checkpointer(model, out, ema=ema).save("g")
flow.manual_seed(1)
other = flow.nn.Linear(4, 6).to_global(placement=placement, sbp=flow.sbp.split(0))
restored = EMAHook(other, decay=0.6, warmup=False)
Checkpointer(other, out, ema=restored).load("g")
loaded = restored.ema_state_dict()["weight"]
same = loaded.sbp == averaged.sbp and np.array_equal(loaded.to_local().numpy(), averaged.to_local().numpy())
print(f"RESULT rank={dist.get_rank()} update_matches={err_update < 1e-6} restored_shard_equal={same}")
'''


def test_two_ranks_average_a_split_parameter_and_restore_each_shard(tmp_path):
    from libai.utils.testing import launch, tagged_lines

    script = tmp_path / "ema_two_ranks.py"
    script.write_text(TWO_RANK_SCRIPT)
    proc = launch(str(script), 2, args=[str(tmp_path / "ck")], timeout=240,
                  env={"PYTHONPATH": REPO_ROOT})  # this checkout's libai
    assert proc.returncode == 0, proc.stdout[-3000:]
    lines = tagged_lines(proc.stdout, ranks=2)
    expected = [f"RESULT rank={r} update_matches=True restored_shard_equal=True" for r in (0, 1)]
    assert lines == expected, proc.stdout[-3000:]
