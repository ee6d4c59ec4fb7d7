"""The warmup schedulers against LiBai's formulas (written out here), in eager mode and inside an nn.Graph."""
import gc
import math
import pickle

import oneflow as flow
import pytest
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.scheduler import (
    WarmupCosineAnnealingLR,
    WarmupCosineLR,
    WarmupExponentialLR,
    WarmupMultiStepLR,
    WarmupPolynomialLR,
    WarmupStepLR,
    build_lr_scheduler,
    set_graph_schedule_step,
)

MAX_ITER = 12
STEPS = 15  # a few iterations past max_iter, where the decays must hold their floor
TWO_BASES = (0.5, 0.2)  # two param groups: each follows the schedule from its own base
# A decay towards an absolute lr cannot share one linear warmup between different base lrs
# (see test_linear_warmup_into_an_absolute_floor_needs_one_base_lr): one base for those.
SAME_BASES = (0.5, 0.5)

# kind -> (class, decay kwargs, base lrs of the two param groups)
KINDS = {
    "cosine": (WarmupCosineLR, {"alpha": 0.1}, TWO_BASES),
    "cosine_annealing": (WarmupCosineAnnealingLR, {"eta_min": 0.0}, TWO_BASES),
    "cosine_annealing_floor": (WarmupCosineAnnealingLR, {"eta_min": 0.05}, SAME_BASES),
    # milestone 3 lies inside the 4-iteration warmups
    "multistep": (WarmupMultiStepLR, {"milestones": [3, 6, 9], "gamma": 0.5}, TWO_BASES),
    "step": (WarmupStepLR, {"step_size": 3, "gamma": 0.5}, TWO_BASES),
    "exponential": (WarmupExponentialLR, {"gamma": 0.8}, TWO_BASES),
    "polynomial": (
        WarmupPolynomialLR, {"end_learning_rate": 0.01, "power": 2.0, "cycle": False}, SAME_BASES
    ),
    "polynomial_cycle": (
        WarmupPolynomialLR, {"end_learning_rate": 0.01, "power": 2.0, "cycle": True}, SAME_BASES
    ),
}

# (warmup_iter, warmup_method, warmup_factor)
WARMUPS = [(0, "linear", 0.1), (4, "linear", 0.1), (4, "constant", 0.25), (5, "linear", 0.0)]


def reference_decay(kind, kw, t, base):
    """LiBai's decay at iteration t: OneFlow's scheduler on the run's own clock."""
    if kind == "cosine":
        if t >= MAX_ITER:
            return base * kw["alpha"]
        return base * (kw["alpha"] + (1 - kw["alpha"]) * (1 + math.cos(math.pi * t / MAX_ITER)) / 2)
    if kind.startswith("cosine_annealing"):
        eta = kw["eta_min"]
        return eta + (base - eta) * (1 + math.cos(math.pi * t / MAX_ITER)) / 2
    if kind == "multistep":
        return base * kw["gamma"] ** len([m for m in kw["milestones"] if m <= t])
    if kind == "step":
        return base * kw["gamma"] ** (t // kw["step_size"])
    if kind == "exponential":
        return base * kw["gamma"] ** t
    end, power = kw["end_learning_rate"], kw["power"]
    if kind == "polynomial":
        return (base - end) * (1 - min(t, MAX_ITER) / MAX_ITER) ** power + end
    c = max(t, 1)
    cycle_span = MAX_ITER * math.ceil(c / MAX_ITER)
    return (base - end) * (1 - c / cycle_span) ** power + end


def reference_lr(kind, kw, t, base, warmup_iter, method, factor):
    """LiBai's schedule at iteration t, written from its definition."""
    if t >= warmup_iter:
        return reference_decay(kind, kw, t, base)
    if method == "constant":
        return base * factor
    end_factor = reference_decay(kind, kw, warmup_iter, base) / base
    return base * (factor + (end_factor - factor) * t / warmup_iter)


def _model_and_optimizer(bases=TWO_BASES):
    model = flow.nn.Module()
    model.w1 = flow.nn.Parameter(flow.zeros(1))
    model.w2 = flow.nn.Parameter(flow.zeros(1))
    opt = flow.optim.SGD(
        [{"params": [model.w1], "lr": bases[0]}, {"params": [model.w2], "lr": bases[1]}],
        lr=1.0,
    )
    return model, opt


def _make(kind, opt, warmup_iter, method, factor):
    cls, kw, _ = KINDS[kind]
    return cls(
        optimizer=opt, max_iter=MAX_ITER, warmup_factor=factor, warmup_iter=warmup_iter,
        warmup_method=method, **kw,
    )


def _eager_lrs(kind, warmup_iter, method, factor):
    _, opt = _model_and_optimizer(KINDS[kind][2])
    sch = _make(kind, opt, warmup_iter, method, factor)
    lrs = []
    for _ in range(STEPS):
        lrs.append([g["lr"] for g in opt.param_groups])
        sch.step()
    return lrs


def _expected(kind, warmup_iter, method, factor):
    _, kw, bases = KINDS[kind]
    return [
        [reference_lr(kind, kw, t, base, warmup_iter, method, factor) for base in bases]
        for t in range(STEPS)
    ]


class _UpdateGraph(flow.nn.Graph):
    """loss = sum of every weight, so plain SGD moves each weight by exactly its group's lr.

    One graph holds many (model, optimizer, scheduler) cases: OneFlow 0.9 graphs are slow to
    build and occasionally unstable to tear down, so the tests build as few as possible.
    """

    def __init__(self, cases):
        super().__init__()
        self.models = flow.nn.ModuleList([model for model, _, _ in cases])
        for _, opt, sch in cases:
            self.add_optimizer(opt, lr_sch=sch)

    def build(self):
        loss = None
        for model in self.models:
            term = (model.w1 * 1).sum() + (model.w2 * 1).sum()
            loss = term if loss is None else loss + term
        loss.backward()
        return loss


def _run_graph(graph, models, steps):
    """The lr of each group of each model at each step, read from the weight updates."""
    lrs = [[] for _ in models]
    prev = [[0.0, 0.0] for _ in models]
    for _ in range(steps):
        graph()
        for i, model in enumerate(models):
            cur = [float(model.w1.numpy()[0]), float(model.w2.numpy()[0])]
            lrs[i].append([p - c for p, c in zip(prev[i], cur)])
            prev[i] = cur
    return lrs


CASES = [(kind, *warmup) for kind in sorted(KINDS) for warmup in WARMUPS]


@pytest.fixture(scope="module")
def graph_lrs():
    """Per case of CASES, the lrs an nn.Graph applied over STEPS steps."""
    cases = []
    for kind, warmup_iter, method, factor in CASES:
        model, opt = _model_and_optimizer(KINDS[kind][2])
        cases.append((model, opt, _make(kind, opt, warmup_iter, method, factor)))
    graph = _UpdateGraph(cases)
    lrs = _run_graph(graph, [model for model, _, _ in cases], STEPS)
    yield dict(zip(CASES, lrs))
    del graph
    gc.collect()


@pytest.mark.parametrize("warmup_iter,method,factor", WARMUPS)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_eager_schedule_matches_closed_form(kind, warmup_iter, method, factor):
    got = _eager_lrs(kind, warmup_iter, method, factor)
    expected = _expected(kind, warmup_iter, method, factor)
    for t, (g, e) in enumerate(zip(got, expected)):
        assert g == pytest.approx(e, rel=1e-9, abs=1e-12), f"iteration {t}"


@pytest.mark.parametrize("kind,warmup_iter,method,factor", CASES)
def test_graph_applies_the_eager_schedule(graph_lrs, kind, warmup_iter, method, factor):
    got = graph_lrs[(kind, warmup_iter, method, factor)]
    eager = _eager_lrs(kind, warmup_iter, method, factor)
    for t, (g, e) in enumerate(zip(got, eager)):
        # float32 weights: the update is read back as a difference of two float32 values
        assert g == pytest.approx(e, rel=1e-5, abs=2e-6), f"iteration {t}"


def test_linear_warmup_ends_where_the_decay_stands():
    # exponential, gamma 0.8, W=4: the warmup climbs from 0.1*base towards 0.8**4*base
    lrs = _eager_lrs("exponential", 4, "linear", 0.1)
    base = TWO_BASES[0]
    assert lrs[0][0] == pytest.approx(0.1 * base)
    assert lrs[2][0] == pytest.approx(base * (0.1 + (0.8 ** 4 - 0.1) * 2 / 4))
    assert lrs[4][0] == pytest.approx(base * 0.8 ** 4)


def test_libai_reference_values():
    """The numbers LiBai's own scheduler tests assert, for its argument order."""
    w = flow.nn.Parameter(flow.zeros(1))
    opt = flow.optim.SGD([w], lr=5.0)
    sch = WarmupStepLR(opt, 10, 0.001, 5, 10, 0.1, "linear")  # LiBai's positional order
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(30):
        sch.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs[:5] == pytest.approx([0.005, 1.004, 2.003, 3.002, 4.001])
    assert lrs[5:10] == pytest.approx([5.0] * 5) and lrs[10:20] == pytest.approx([0.5] * 10)
    assert lrs[30] == pytest.approx(0.005)
    opt2 = flow.optim.SGD([flow.nn.Parameter(flow.zeros(1))], lr=5.0)
    exp = WarmupExponentialLR(opt2, 10, 0.1, 0.001, 5)  # gamma comes before warmup_factor
    got = [opt2.param_groups[0]["lr"]]
    for _ in range(6):
        exp.step()
        got.append(opt2.param_groups[0]["lr"])
    assert got[:5] == pytest.approx([0.005, 0.00401, 0.00302, 0.00203, 0.00104])
    assert got[5] == 5.0 * 0.1 ** 5 and got[6] == 5.0 * 0.1 ** 6  # exactly


def test_linear_warmup_into_an_absolute_floor_needs_one_base_lr():
    _, opt = _model_and_optimizer(TWO_BASES)
    with pytest.raises(ValueError, match=r"WarmupPolynomialLR: a linear warmup into this decay "
                       r"needs every param group to have the same base lr \(groups have \[0.2, 0.5\]\)"):
        WarmupPolynomialLR(opt, MAX_ITER, 0.1, 4, end_learning_rate=0.01)
    # a constant warmup has no end point to meet, so differing base lrs are fine
    _, opt = _model_and_optimizer(TWO_BASES)
    sch = WarmupCosineAnnealingLR(opt, MAX_ITER, 0.5, 4, eta_min=0.05, warmup_method="constant")
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.25, 0.1])
    for _ in range(4):
        sch.step()
    expected = [reference_decay("cosine_annealing", {"eta_min": 0.05}, 4, b) for b in TWO_BASES]
    assert [g["lr"] for g in opt.param_groups] == pytest.approx(expected)


def test_build_lr_scheduler_fills_the_optimizer_and_leaves_the_config_alone():
    _, opt = _model_and_optimizer()
    cfg = LazyCall(WarmupCosineLR)(max_iter=100, warmup_factor=0.01, warmup_iter=10)
    before = OmegaConf.to_yaml(cfg)
    sch = build_lr_scheduler(cfg, opt, max_iter=MAX_ITER)
    assert isinstance(sch, WarmupCosineLR) and sch.max_iter == MAX_ITER and sch.warmup_iter == 10
    assert OmegaConf.to_yaml(cfg) == before
    with pytest.raises(TypeError, match="needs a scheduler config node"):
        build_lr_scheduler({"max_iter": 3}, opt)


@pytest.mark.parametrize("kind", ["cosine", "multistep", "polynomial"])
def test_resume_from_state_dict_continues_the_schedule(kind):
    expected = _eager_lrs(kind, 4, "linear", 0.1)
    _, opt = _model_and_optimizer(KINDS[kind][2])
    sch = _make(kind, opt, 4, "linear", 0.1)
    for _ in range(6):
        sch.step()
    state = pickle.loads(pickle.dumps(sch.state_dict()))  # what a checkpoint stores

    _, fresh_opt = _model_and_optimizer(KINDS[kind][2])  # optimizer rebuilt, its lr back at the base value
    resumed = _make(kind, fresh_opt, 4, "linear", 0.1)
    resumed.load_state_dict(state)
    got = []
    for _ in range(6, STEPS):
        got.append([g["lr"] for g in fresh_opt.param_groups])
        resumed.step()
    for t, (g, e) in enumerate(zip(got, expected[6:]), start=6):
        assert g == pytest.approx(e, rel=1e-9), f"iteration {t}"


def test_graph_resume_starts_at_the_given_iteration_and_only_before_running():
    model, opt = _model_and_optimizer()
    graph = _UpdateGraph([(model, opt, _make("cosine", opt, 4, "linear", 0.1))])
    set_graph_schedule_step(graph, 5)
    (got,) = _run_graph(graph, [model], 4)
    expected = _expected("cosine", 4, "linear", 0.1)[5:9]
    for g, e in zip(got, expected):
        assert g == pytest.approx(e, rel=1e-5, abs=2e-6)
    with pytest.raises(RuntimeError, match="already run"):
        set_graph_schedule_step(graph, 3)
    del graph
    gc.collect()


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"warmup_method": "cosine"}, ValueError, "warmup_method must be 'linear' or 'constant'"),
        ({"warmup_iter": 13}, ValueError, r"warmup_iter must be an integer in \[0, max_iter=12\]"),
        ({"max_iter": 0}, ValueError, "max_iter must be a positive integer"),
        ({"warmup_factor": 1.5}, ValueError, r"warmup_factor must be a number in \[0, 1\]"),
        ({"alpha": 2.0}, ValueError, r"alpha is the lr floor .* in \[0, 1\]"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    _, opt = _model_and_optimizer()
    args = {"optimizer": opt, "max_iter": MAX_ITER, "warmup_iter": 2}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        WarmupCosineLR(**args)


def test_multistep_milestones_must_increase():
    _, opt = _model_and_optimizer()
    with pytest.raises(ValueError, match=r"strictly increasing, got \[8, 8\]"):
        WarmupMultiStepLR(optimizer=opt, max_iter=MAX_ITER, milestones=[8, 8])


def test_optimizer_must_be_an_optimizer():
    with pytest.raises(TypeError, match="optimizer must be a oneflow.optim.Optimizer, got list"):
        WarmupStepLR(optimizer=[], max_iter=MAX_ITER, step_size=2)


def test_resuming_a_schedule_of_another_shape_is_an_error():
    _, opt = _model_and_optimizer()
    without_warmup = _make("cosine", opt, 0, "linear", 0.1).state_dict()
    _, opt2 = _model_and_optimizer()
    with_warmup = _make("cosine", opt2, 4, "linear", 0.1)
    with pytest.raises(ValueError, match=r"saved schedule has 1 phase\(s\) but this one has 2"):
        with_warmup.load_state_dict(without_warmup)


def test_resuming_with_a_changed_max_iter_keeps_the_saved_schedule(caplog):
    _, opt = _model_and_optimizer()
    saved = _make("cosine", opt, 4, "linear", 0.1)
    for _ in range(6):
        saved.step()
    _, opt2 = _model_and_optimizer()
    longer = WarmupCosineLR(optimizer=opt2, max_iter=50, warmup_factor=0.1, warmup_iter=4, alpha=0.1)
    longer.load_state_dict(saved.state_dict())
    assert "max_iter: 50 -> 12" in caplog.text
    expected = _expected("cosine", 4, "linear", 0.1)
    assert [g["lr"] for g in opt2.param_groups] == pytest.approx(expected[6])
