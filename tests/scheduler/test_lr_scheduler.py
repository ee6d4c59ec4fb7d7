"""The warmup schedulers against closed-form formulas, in eager mode and inside an nn.Graph."""
import gc
import math
import pickle

import oneflow as flow
import pytest

from libai.scheduler import (
    WarmupCosineLR,
    WarmupExponentialLR,
    WarmupMultiStepLR,
    WarmupPolynomialLR,
    WarmupStepLR,
    set_graph_schedule_step,
)

MAX_ITER = 12
STEPS = 15  # a few iterations past max_iter, where the decays must hold their floor
BASE_LRS = (0.5, 0.2)  # two param groups: each follows the schedule from its own base

# kind -> (class, decay kwargs)
KINDS = {
    "cosine": (WarmupCosineLR, {"alpha": 0.1}),
    "multistep": (WarmupMultiStepLR, {"milestones": [6, 9], "gamma": 0.5}),
    "step": (WarmupStepLR, {"step_size": 3, "gamma": 0.5}),
    "exponential": (WarmupExponentialLR, {"gamma": 0.8}),
    "polynomial": (WarmupPolynomialLR, {"end_learning_rate": 0.01, "power": 2.0, "cycle": False}),
    "polynomial_cycle": (
        WarmupPolynomialLR,
        {"end_learning_rate": 0.01, "power": 2.0, "cycle": True},
    ),
}

# (warmup_iter, warmup_method, warmup_factor)
WARMUPS = [(0, "linear", 0.1), (4, "linear", 0.1), (4, "constant", 0.25)]


def reference_lr(kind, kw, t, base, warmup_iter, method, factor):
    """The schedule written from its definition, independently of the implementation."""
    if t < warmup_iter:
        if method == "linear":
            return base * (factor + (1.0 - factor) * t / warmup_iter)
        return base * factor
    s = t - warmup_iter
    span = MAX_ITER - warmup_iter
    if kind == "cosine":
        if s >= span:
            return base * kw["alpha"]
        return base * (kw["alpha"] + (1 - kw["alpha"]) * (1 + math.cos(math.pi * s / span)) / 2)
    if kind == "multistep":
        return base * kw["gamma"] ** len([m for m in kw["milestones"] if m <= t])
    if kind == "step":
        return base * kw["gamma"] ** (s // kw["step_size"])
    if kind == "exponential":
        return base * kw["gamma"] ** s
    end, power = kw["end_learning_rate"], kw["power"]
    if kind == "polynomial":
        return (base - end) * (1 - min(s, span) / span) ** power + end
    c = max(s, 1)
    cycle_span = span * math.ceil(c / span)
    return (base - end) * (1 - c / cycle_span) ** power + end


def _model_and_optimizer():
    model = flow.nn.Module()
    model.w1 = flow.nn.Parameter(flow.zeros(1))
    model.w2 = flow.nn.Parameter(flow.zeros(1))
    opt = flow.optim.SGD(
        [{"params": [model.w1], "lr": BASE_LRS[0]}, {"params": [model.w2], "lr": BASE_LRS[1]}],
        lr=1.0,
    )
    return model, opt


def _make(kind, opt, warmup_iter, method, factor):
    cls, kw = KINDS[kind]
    return cls(
        optimizer=opt, max_iter=MAX_ITER, warmup_factor=factor, warmup_iter=warmup_iter,
        warmup_method=method, **kw,
    )


def _eager_lrs(kind, warmup_iter, method, factor):
    _, opt = _model_and_optimizer()
    sch = _make(kind, opt, warmup_iter, method, factor)
    lrs = []
    for _ in range(STEPS):
        lrs.append([g["lr"] for g in opt.param_groups])
        sch.step()
    return lrs


def _expected(kind, warmup_iter, method, factor):
    kw = KINDS[kind][1]
    return [
        [reference_lr(kind, kw, t, base, warmup_iter, method, factor) for base in BASE_LRS]
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
        model, opt = _model_and_optimizer()
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


def test_linear_warmup_reaches_base_lr_when_decay_starts():
    lrs = _eager_lrs("cosine", 4, "linear", 0.1)
    assert lrs[0][0] == pytest.approx(0.1 * BASE_LRS[0])
    assert lrs[4][0] == pytest.approx(BASE_LRS[0])


@pytest.mark.parametrize("kind", ["cosine", "multistep", "polynomial"])
def test_resume_from_state_dict_continues_the_schedule(kind):
    expected = _eager_lrs(kind, 4, "linear", 0.1)
    _, opt = _model_and_optimizer()
    sch = _make(kind, opt, 4, "linear", 0.1)
    for _ in range(6):
        sch.step()
    state = pickle.loads(pickle.dumps(sch.state_dict()))  # what a checkpoint stores

    _, fresh_opt = _model_and_optimizer()  # optimizer rebuilt, its lr back at the base value
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


def test_multistep_milestone_inside_warmup_is_an_error():
    _, opt = _model_and_optimizer()
    with pytest.raises(ValueError, match=r"milestones \[3\] fall inside the warmup"):
        WarmupMultiStepLR(optimizer=opt, max_iter=MAX_ITER, milestones=[3, 8], warmup_iter=4)
    with pytest.raises(ValueError, match="strictly increasing"):
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
