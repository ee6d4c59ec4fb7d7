"""LiBai's stand-alone ``libai.models.build_model`` / ``build_graph``."""
import numpy as np
import oneflow as flow
import pytest

from libai.config import LazyConfig, instantiate
from libai.models import build_graph, build_model
from libai.scheduler import WarmupCosineLR
from libai.utils import distributed as dist

CFG = "configs/examples/gpt_tiny_synthetic.py"


@pytest.fixture()
def cfg():
    dist.reset_layouts()
    c = LazyConfig.load(CFG)
    c.model.cfg.update(hidden_layers=2, hidden_size=32, intermediate_size=64)
    dist.setup_dist_util(dict(device_type="cpu"))
    yield c
    dist.reset_layouts()


def _batch(seed=0):
    g = np.random.RandomState(seed)
    ids = flow.tensor(g.randint(0, 128, size=(4, 16)), dtype=flow.long)
    return ids, flow.roll(ids, -1, dims=1)


def test_build_graph_trains_like_eager(cfg):
    flow.manual_seed(0)
    eager_model = build_model(cfg.model)
    graph_model = build_model(cfg.model)
    graph_model.load_state_dict(eager_model.state_dict())
    eager_opt = flow.optim.SGD(eager_model.parameters(), lr=0.1)
    graph_opt = flow.optim.SGD(graph_model.parameters(), lr=0.1)
    sched = WarmupCosineLR(graph_opt, max_iter=10, warmup_factor=1.0, warmup_iter=0)
    train_graph = build_graph(cfg, graph_model, graph_opt, sched, is_train=True)
    assert isinstance(train_graph, flow.nn.Graph)
    eager_sched = WarmupCosineLR(eager_opt, max_iter=10, warmup_factor=1.0, warmup_iter=0)
    for step in range(3):
        ids, labels = _batch(step)
        graph_loss = train_graph(input_ids=ids, labels=labels)["lm_loss"]
        eager_loss = eager_model(input_ids=ids, labels=labels)["lm_loss"]
        eager_loss.backward()
        eager_opt.step()
        eager_opt.zero_grad()
        eager_sched.step()
        np.testing.assert_allclose(graph_loss.numpy(), eager_loss.numpy(), rtol=1e-4)
    assert train_graph.is_compiled
    eval_graph = build_graph(cfg, graph_model, is_train=False)
    graph_model.eval()
    ids, _ = _batch(9)
    np.testing.assert_allclose(eval_graph(input_ids=ids)["prediction_scores"].numpy(),
                               graph_model(input_ids=ids)["prediction_scores"].numpy(), rtol=1e-4, atol=1e-5)


def test_build_graph_for_training_needs_optimizer_and_scheduler(cfg):
    model = build_model(cfg.model)
    with pytest.raises(ValueError, match="needs the optimizer and the lr_scheduler"):
        build_graph(cfg, model, is_train=True)


def test_build_model_sets_up_a_one_process_layout_when_none_is_set():
    dist.reset_layouts()
    c = LazyConfig.load(CFG)
    c.model.cfg.update(hidden_layers=1, hidden_size=16, intermediate_size=32)
    model = build_model(c.model)
    assert dist.has_layout() and dist.get_dist_util().world_size == 1
    assert isinstance(model, flow.nn.Module)
    dist.reset_layouts()


def test_build_graph_takes_libais_graph_settings(cfg):
    model = build_model(cfg.model)
    # LiBai's configs carry both switched off: they must build.
    cfg.graph.global_mode = dict(enabled=False)
    cfg.graph.auto_parallel = dict(enabled=False, trunk_algo=True)
    assert isinstance(build_graph(cfg, model, is_train=False), flow.nn.Graph)
    cfg.graph.global_mode = dict(enabled=True)
    with pytest.raises(Exception, match="global_mode needs a newer OneFlow"):
        build_graph(cfg, model, is_train=False)


def test_importing_libai_models_does_not_load_the_engine():
    import subprocess
    import sys

    code = "import sys, libai.models; print('libai.engine' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"
