"""Parameter groups, clipping and build_optimizer."""
import numpy as np
import oneflow as flow
import pytest
from omegaconf import OmegaConf

from libai.optim import (
    build_optimizer,
    expand_param_groups,
    get_default_optimizer_params,
    is_norm_module,
    reduce_param_groups,
)


class ScaleNorm(flow.nn.Module):
    """Stands in for a norm layer written elsewhere (libai.layers.LayerNorm, RMSNorm...)."""

    def __init__(self, dim):
        super().__init__()
        self.weight = flow.nn.Parameter(flow.ones(dim))

    def forward(self, x):
        return x * self.weight


class Block(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.pos_embed = flow.nn.Parameter(flow.zeros(3))
        self.proj = flow.nn.Linear(3, 3)
        self.norm = ScaleNorm(3)


class Net(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = flow.nn.Linear(4, 3)
        self.ln = flow.nn.LayerNorm(3)
        self.block = Block()
        self.frozen = flow.nn.Linear(3, 3)
        for p in self.frozen.parameters():
            p.requires_grad = False
        self.tied = self.fc  # the same parameters reachable twice


def _group_of(groups, param):
    found = [g for g in groups if any(p is param for p in g["params"])]
    assert len(found) == 1, "each parameter must be in exactly one group"
    return found[0]


def test_bias_and_norm_parameters_get_their_own_weight_decay():
    net = Net()
    groups = get_default_optimizer_params(
        net, base_lr=0.1, weight_decay=0.05, weight_decay_norm=0.0, weight_decay_bias=0.0
    )
    for p in (net.fc.weight, net.block.proj.weight, net.block.pos_embed):
        assert _group_of(groups, p)["weight_decay"] == 0.05
    for p in (net.fc.bias, net.block.proj.bias, net.ln.weight, net.ln.bias, net.block.norm.weight):
        assert _group_of(groups, p)["weight_decay"] == 0.0
    assert all(g["lr"] == 0.1 for g in groups)


def test_each_trainable_parameter_appears_once_and_frozen_ones_not_at_all():
    net = Net()
    groups = get_default_optimizer_params(
        net, weight_decay=0.05, weight_decay_norm=0.0, weight_decay_bias=0.01
    )
    listed = [p for g in groups for p in g["params"]]
    trainable = {id(p) for p in net.parameters() if p.requires_grad}
    assert len(listed) == len(trainable) == 8
    assert {id(p) for p in listed} == trainable
    # three distinct option sets: decayed weights, biases (0.01), norm weights (0.0)
    assert sorted(g["weight_decay"] for g in groups) == [0.0, 0.01, 0.05]
    assert _group_of(groups, net.ln.weight)["weight_decay"] == 0.0
    assert _group_of(groups, net.ln.bias)["weight_decay"] == 0.01  # bias rule beats norm rule


def test_norm_and_bias_rules_are_off_by_default():
    net = Net()
    groups = get_default_optimizer_params(net, weight_decay=0.05)
    assert len(groups) == 1 and groups[0]["weight_decay"] == 0.05
    assert len(groups[0]["params"]) == 8


def test_bias_rule_and_a_bias_override_together_are_refused():
    with pytest.raises(ValueError, match=r"weight_decay_bias=0.0 and overrides\['bias'\]"):
        get_default_optimizer_params(
            Net(), weight_decay_bias=0.0, overrides={"bias": {"weight_decay": 0.1}}
        )


def test_none_leaves_options_to_the_optimizer_defaults():
    groups = get_default_optimizer_params(Net(), weight_decay_norm=None, weight_decay_bias=None)
    assert len(groups) == 1
    assert set(groups[0]) == {"params"}


def test_expand_gives_each_parameter_the_merged_options_of_its_groups():
    a, b, c = flow.nn.Parameter(flow.zeros(1)), flow.nn.Parameter(flow.zeros(1)), flow.nn.Parameter(flow.zeros(1))
    groups = [
        {"params": [a, b], "lr": 1.0, "weight_decay": 0.5},
        {"params": [b, c], "lr": 2.0, "betas": (0.8, 0.9)},
        {"params": [a], "weight_decay": 0.0},
    ]
    out = expand_param_groups(groups)
    assert [g["params"][0] for g in out] == [a, b, c] and all(len(g["params"]) == 1 for g in out)
    assert [{k: v for k, v in g.items() if k != "params"} for g in out] == [
        {"lr": 1.0, "weight_decay": 0.0},
        {"lr": 2.0, "weight_decay": 0.5, "betas": (0.8, 0.9)},
        {"lr": 2.0, "betas": (0.8, 0.9)},
    ]
    with pytest.raises(ValueError, match="param group 0 has no 'params'"):
        expand_param_groups([{"lr": 1.0}])


def test_reduce_merges_parameters_with_equal_options_in_first_seen_order():
    p = [flow.nn.Parameter(flow.zeros(1)) for _ in range(5)]
    groups = [
        {"params": [p[0]], "lr": 1.0},
        {"params": [p[1], p[2]], "weight_decay": 0.1, "lr": 2.0},
        {"params": [p[3]], "lr": 2.0, "weight_decay": 0.1},  # same options, other key order
        {"params": [p[4]], "lr": 1.0},
        {"params": [p[0]], "momentum": 0.9},  # p[0] gains an option: it leaves the lr=1 group
    ]
    out = reduce_param_groups(groups)
    assert [[id(x) for x in g["params"]] for g in out] == [
        [id(p[0])], [id(p[1]), id(p[2]), id(p[3])], [id(p[4])]
    ]
    assert [{k: v for k, v in g.items() if k != "params"} for g in out] == [
        {"lr": 1.0, "momentum": 0.9}, {"weight_decay": 0.1, "lr": 2.0}, {"lr": 1.0}
    ]
    from libai.optim import build  # LiBai's spelling of the same functions

    assert build._expand_param_groups is expand_param_groups
    assert build.reduce_param_groups is reduce_param_groups


def test_overrides_by_short_and_full_name():
    net = Net()
    groups = get_default_optimizer_params(
        net,
        base_lr=0.1,
        weight_decay=0.05,
        overrides={"pos_embed": {"weight_decay": 0.0, "lr": 0.5}, "fc.weight": {"lr": 0.2}},
    )
    pos = _group_of(groups, net.block.pos_embed)
    assert (pos["weight_decay"], pos["lr"]) == (0.0, 0.5)
    assert _group_of(groups, net.fc.weight)["lr"] == 0.2
    assert _group_of(groups, net.block.proj.weight)["lr"] == 0.1


def test_full_name_override_wins_over_short_name():
    net = Net()
    groups = get_default_optimizer_params(
        net, overrides={"weight": {"lr": 0.3}, "block.proj.weight": {"lr": 0.7}}
    )
    assert _group_of(groups, net.block.proj.weight)["lr"] == 0.7
    assert _group_of(groups, net.fc.weight)["lr"] == 0.3


def test_clip_keys_go_into_every_group():
    groups = get_default_optimizer_params(
        Net(), weight_decay=0.1, weight_decay_bias=0.0, clip_grad_max_norm=1.0
    )
    assert len(groups) == 2
    for g in groups:
        assert (g["clip_grad_max_norm"], g["clip_grad_norm_type"]) == (1.0, 2.0)


def test_norm_detection_by_type_and_by_name():
    assert is_norm_module(flow.nn.BatchNorm2d(3))
    assert is_norm_module(flow.nn.GroupNorm(1, 3))
    assert is_norm_module(ScaleNorm(3))
    assert not is_norm_module(flow.nn.Linear(2, 2))


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"overrides": {"pos_embd": {"lr": 1.0}}}, ValueError, r"\['pos_embd'\] match no trainable"),
        ({"overrides": {"pos_embed": 0.1}}, TypeError, r"overrides\['pos_embed'\] must be a dict"),
        ({"clip_grad_max_norm": 0.0}, ValueError, "clip_grad_max_norm must be positive"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        get_default_optimizer_params(Net(), **kwargs)


def test_model_without_trainable_parameters_is_an_error():
    frozen = flow.nn.Linear(2, 2)
    for p in frozen.parameters():
        p.requires_grad = False
    with pytest.raises(ValueError, match="no trainable parameters"):
        get_default_optimizer_params(frozen)
    with pytest.raises(TypeError, match="needs the model"):
        get_default_optimizer_params("model")


# ------------------------------------------------------------------------------- clipping
class TwoWeights(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = flow.nn.Parameter(flow.zeros(2))
        self.bias = flow.nn.Parameter(flow.zeros(2))


GRAD_W = np.array([3.0, 4.0], dtype=np.float32)  # norm 5
GRAD_B = np.array([0.0, 12.0], dtype=np.float32)  # norm 12; global norm 13


def _loss(model):
    return (model.weight * flow.tensor(GRAD_W)).sum() + (model.bias * flow.tensor(GRAD_B)).sum()


def _clip_by_hand(grads, max_norm):
    norm = float(np.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads)))
    scale = min(1.0, max_norm / (norm + 1e-6))
    return [g * scale for g in grads]


def _eager_update(weight_decay_bias, lr=0.1, max_norm=2.0):
    model = TwoWeights()
    groups = get_default_optimizer_params(
        model, weight_decay=0.0, weight_decay_bias=weight_decay_bias, clip_grad_max_norm=max_norm
    )
    opt = flow.optim.SGD(groups, lr=lr)
    _loss(model).backward()
    opt.clip_grad()
    opt.step()
    return model, len(groups)


def test_one_group_clips_by_the_global_norm():
    model, n_groups = _eager_update(weight_decay_bias=0.0)
    assert n_groups == 1  # identical options merge, so the norm is over every gradient
    gw, gb = _clip_by_hand([GRAD_W, GRAD_B], 2.0)
    np.testing.assert_allclose(model.weight.numpy(), -0.1 * gw, rtol=1e-5)
    np.testing.assert_allclose(model.bias.numpy(), -0.1 * gb, rtol=1e-5)


def test_several_groups_clip_each_by_its_own_norm_in_eager_and_graph():
    # a different bias weight decay makes two groups (it does not change this first update:
    # the weights start at 0, so the decay term adds nothing)
    model, n_groups = _eager_update(weight_decay_bias=0.5)
    assert n_groups == 2
    (gw,) = _clip_by_hand([GRAD_W], 2.0)
    (gb,) = _clip_by_hand([GRAD_B], 2.0)
    np.testing.assert_allclose(model.weight.numpy(), -0.1 * gw, rtol=1e-5)
    np.testing.assert_allclose(model.bias.numpy(), -0.1 * gb, rtol=1e-5)

    graph_model = TwoWeights()
    groups = get_default_optimizer_params(
        graph_model, weight_decay=0.0, weight_decay_bias=0.5, clip_grad_max_norm=2.0
    )
    opt = flow.optim.SGD(groups, lr=0.1)

    class StepGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = graph_model
            self.add_optimizer(opt)

        def build(self):
            loss = _loss(self.model)
            loss.backward()
            return loss

    StepGraph()()
    np.testing.assert_allclose(graph_model.weight.numpy(), model.weight.numpy(), rtol=1e-5)
    np.testing.assert_allclose(graph_model.bias.numpy(), model.bias.numpy(), rtol=1e-5)


# -------------------------------------------------------------------------- build_optimizer
def _optim_cfg():
    return OmegaConf.create(
        {
            "_target_": "oneflow.optim.SGD",
            "params": {
                "_target_": "libai.optim.get_default_optimizer_params",
                "weight_decay": 0.05,
                "weight_decay_norm": 0.0,
                "clip_grad_max_norm": 1.0,
                "overrides": {"pos_embed": {"weight_decay": 0.0}},
            },
            "lr": 0.3,
            "momentum": 0.9,
        }
    )


def test_build_optimizer_fills_in_the_model_and_leaves_the_config_alone():
    net = Net()
    cfg = _optim_cfg()
    before = OmegaConf.to_yaml(cfg)
    opt = build_optimizer(cfg, net)
    assert isinstance(opt, flow.optim.SGD)
    assert OmegaConf.to_yaml(cfg) == before
    listed = [p for g in opt.param_groups for p in g.parameters]
    assert len(listed) == 8
    by_param = {id(p): g for g in opt.param_groups for p in g.parameters}
    assert by_param[id(net.fc.weight)]["weight_decay"] == 0.05
    assert by_param[id(net.block.pos_embed)]["weight_decay"] == 0.0
    assert by_param[id(net.ln.weight)]["weight_decay"] == 0.0
    assert all(g["lr"] == 0.3 and g["momentum"] == 0.9 for g in opt.param_groups)
    assert all(g["clip_grad_max_norm"] == 1.0 for g in opt.param_groups)


def test_build_optimizer_without_params_node_is_an_error():
    cfg = OmegaConf.create({"_target_": "oneflow.optim.SGD", "lr": 0.1})
    with pytest.raises(ValueError, match="has no 'params'"):
        build_optimizer(cfg, Net())
    with pytest.raises(ValueError, match="no _target_"):
        build_optimizer(OmegaConf.create({"lr": 0.1}), Net())


def test_libai_layer_norm_is_a_norm(local_layout):
    from libai.layers.layer_norm import LayerNorm

    model = flow.nn.Module()
    model.proj = flow.nn.Linear(3, 3, bias=False)
    model.norm = LayerNorm(3)
    groups = get_default_optimizer_params(model, weight_decay=0.05, weight_decay_norm=0.0)
    assert _group_of(groups, model.norm.weight)["weight_decay"] == 0.0
    assert _group_of(groups, model.norm.bias)["weight_decay"] == 0.0
    assert _group_of(groups, model.proj.weight)["weight_decay"] == 0.05


def test_build_optimizer_from_lazycall_nodes():
    from libai.config import LazyCall

    net = Net()
    cfg = LazyCall(flow.optim.AdamW)(
        params=LazyCall(get_default_optimizer_params)(weight_decay_norm=0.0, weight_decay_bias=0.02),
        lr=1e-3,
        weight_decay=0.1,
        betas=(0.8, 0.9),
    )
    opt = build_optimizer(cfg, net)
    assert isinstance(opt, flow.optim.AdamW)
    by_param = {id(p): g for g in opt.param_groups for p in g.parameters}
    assert by_param[id(net.fc.weight)]["weight_decay"] == 0.1  # the optimizer's default
    assert by_param[id(net.fc.bias)]["weight_decay"] == 0.02
    assert by_param[id(net.ln.weight)]["weight_decay"] == 0.0
    assert list(by_param[id(net.fc.weight)]["betas"]) == [0.8, 0.9]
