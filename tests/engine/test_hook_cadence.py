"""HookBase's cadence helpers, evaluation results published for the hooks after EvalHook, and
the rule that hooks use these instead of other objects' private attributes."""
import ast
import os

import pytest

from libai.engine import hooks
from libai.engine.trainer import HookBase, TrainerBase

HOOKS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "libai", "engine", "hooks")


class Nothing(TrainerBase):
    def run_step(self):
        pass


class Probe(HookBase):
    """Records what the helpers answer at every event."""

    def __init__(self, n):
        self.n = n
        self.every, self.last, self.results, self.discarded = [], [], [], []

    def after_step(self):
        it = self.trainer.iter
        if self.every_n_iters(self.n):
            self.every.append(it)
        if self.is_last_iter():
            self.last.append(it)
        if self.evaluation_results() is not None:
            self.results.append((it, self.evaluation_results()["score"]))
        self.discarded.append(self.weights_discarded())

    def after_train(self):
        results = self.evaluation_results()
        if results is not None:
            self.results.append(("after_train", results["score"]))


def test_every_n_iters_and_is_last_iter_count_completed_iterations_from_zero():
    probe = Probe(n=3)
    trainer = Nothing()
    trainer.register_hooks([probe])
    trainer.train(4, 10)  # a resumed run keeps the schedule of iterations 2, 5, 8
    assert probe.every == [5, 8]
    assert probe.last == [9]
    assert probe.discarded == [False] * 6
    never = Probe(n=0)
    trainer = Nothing()
    trainer.register_hooks([never])
    trainer.train(0, 4)
    assert never.every == []


def test_weights_discarded_only_after_a_stop_that_keeps_no_checkpoint():
    class Stop(HookBase):
        def __init__(self, save):
            self.save = save

        def after_step(self):
            if self.trainer.iter == 1:
                self.trainer.request_stop("demo", save_checkpoint=self.save)

    for save, expected in ((False, [False, True]), (True, [False, False])):
        probe = Probe(n=1)
        trainer = Nothing()
        trainer.register_hooks([Stop(save), probe])
        trainer.train(0, 5)
        assert probe.discarded == expected


def scripted_eval(scores):
    """An evaluation function returning the next score each call (and counting calls)."""
    calls = []

    def evaluate():
        calls.append(len(calls))
        return {"score": scores[len(calls) - 1]}

    return evaluate, calls


def test_evaluation_results_are_seen_by_hooks_after_eval_hook_for_that_iteration_only():
    evaluate, calls = scripted_eval([0.1, 0.2, 0.3, 0.4])
    before, after = Probe(n=1), Probe(n=1)
    trainer = Nothing()
    trainer.register_hooks([before, hooks.EvalHook(3, evaluate), after])
    trainer.train(0, 8)
    # Iterations 2 and 5 are evaluated periodically, the last (7) after training.
    assert after.results == [(2, 0.1), (5, 0.2), ("after_train", 0.3)]
    assert before.results == []  # at every event it runs before the evaluation
    assert len(calls) == 3
    assert (trainer.latest_eval_iter, trainer.latest_eval_results) == (7, {"score": 0.3})


def test_an_iteration_is_evaluated_once_when_training_stops_right_after_its_evaluation():
    class StopAt(HookBase):
        def after_step(self):
            if self.trainer.iter == 5:
                self.trainer.request_stop("enough")

    evaluate, calls = scripted_eval([0.1, 0.2, 0.3])
    trainer = Nothing()
    trainer.register_hooks([hooks.EvalHook(3, evaluate), StopAt()])
    trainer.train(0, 20)
    assert len(calls) == 2 and trainer.latest_eval_iter == 5


def test_discarded_weights_are_not_evaluated():
    class Poison(HookBase):
        def after_step(self):
            if self.trainer.iter == 5:
                self.trainer.request_stop("nan", save_checkpoint=False)

    evaluate, calls = scripted_eval([0.1, 0.2, 0.3])
    trainer = Nothing()
    trainer.register_hooks([Poison(), hooks.EvalHook(3, evaluate)])
    trainer.train(0, 20)
    assert len(calls) == 1 and trainer.latest_eval_iter == 2


class FakeCheckpointer:
    def __init__(self):
        self.saved = []

    def save(self, name, tag_last_checkpoint=True, iteration=None, **extra):
        self.saved.append((name, iteration, tag_last_checkpoint))

    def keep_last(self, n, prefix="model_"):
        return []


def test_best_checkpointer_and_early_stopping_react_to_each_evaluation():
    # Evaluations at iterations 1, 3, 5, 7: the score improves, then stalls twice.
    evaluate, calls = scripted_eval([0.5, 0.7, 0.6, 0.65, 0.9, 0.95])
    ckpt = FakeCheckpointer()
    best = hooks.BestCheckpointer(2, ckpt, "score", "max")
    stop = hooks.EarlyStopping(2, "score", "max", patience=2)
    trainer = Nothing()
    trainer.register_hooks([hooks.EvalHook(2, evaluate), best, stop])
    trainer.train(0, 100)
    assert ckpt.saved == [("model_best", 1, False), ("model_best", 3, False)]
    assert (best.best_metric, best.best_iter) == (0.7, 3)
    assert trainer.stop_reason.startswith("early stopping: score has not improved on 0.7000 for 2")
    assert trainer.iter == 8 and len(calls) == 4  # stopped after iteration 7, already evaluated
    assert (stop.best, stop.bad_evals) == (0.7, 2)


def test_best_checkpointer_saves_the_final_evaluation_and_names_missing_metrics(caplog):
    evaluate, _ = scripted_eval([0.5, 0.9])
    ckpt = FakeCheckpointer()
    trainer = Nothing()
    trainer.register_hooks([hooks.EvalHook(3, evaluate), hooks.BestCheckpointer(3, ckpt, "score", "min")])
    trainer.train(0, 4)
    assert ckpt.saved == [("model_best", 2, False)]  # 0.9 at the end is worse for "min"
    ckpt = FakeCheckpointer()
    trainer = Nothing()
    calls = []
    trainer.register_hooks([hooks.EvalHook(3, lambda: calls.append(1) or {"acc": 1.0}),
                            hooks.BestCheckpointer(3, ckpt, "score")])
    with pytest.raises(KeyError) as failure:  # at the first evaluation, not at the end
        trainer.train(0, 100)
    assert ckpt.saved == [] and len(calls) == 1 and trainer.iter == 2
    assert str(failure.value).startswith("train.evaluation.eval_metric='score' is not a metric the "
                                         "evaluation reports; it reports ['acc']")


def test_hooks_that_keep_weights_say_when_and_the_nan_check_looks_first():
    checked = []

    class NaNProbe(hooks.NaNLossHook):
        def _check_losses(self):
            checked.append(self.trainer.iter + 1)

    ckpt = FakeCheckpointer()
    periodic = hooks.PeriodicCheckpointer(ckpt, period=4)
    evaluation = hooks.EvalHook(6, lambda: {"score": 1.0})
    trainer = Nothing()
    trainer.register_hooks([NaNProbe(period=100), periodic, evaluation])
    kept = []

    class Ask(HookBase):
        def after_step(self):
            kept.append([h.name for h in self.trainer.hooks if h.keeps_weights()])

    trainer.register_hooks([Ask()])
    trainer.train(0, 14)
    assert checked == [4, 6, 8, 12, 14]
    by_iter = {i + 1: names for i, names in enumerate(kept) if names}
    assert by_iter == {4: ["PeriodicCheckpointer"], 6: ["EvalHook"], 8: ["PeriodicCheckpointer"],
                       12: ["PeriodicCheckpointer", "EvalHook"], 14: ["PeriodicCheckpointer", "EvalHook"]}


def _private_reads_of_other_objects(path):
    """``x._name`` where ``x`` is not ``self`` (or ``cls``), and ``getattr(x, "_name")``."""
    tree = ast.parse(open(path).read())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                and str(node.args[1].value).startswith("_")):
            found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(HOOKS_DIR) if f.endswith(".py")))
def test_no_hook_reads_another_objects_private_attributes(name):
    assert _private_reads_of_other_objects(os.path.join(HOOKS_DIR, name)) == []


def test_the_private_read_check_finds_what_it_is_for():
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("class H:\n    def f(self):\n        a = self.trainer._trainer\n"
                "        b = getattr(self.trainer.get_hook('EvalHook'), '_period', 0)\n        c = self._mine\n")
    try:
        found = _private_reads_of_other_objects(f.name)
    finally:
        os.unlink(f.name)
    assert found == ["self.trainer._trainer (line 3)",
                     "getattr(self.trainer.get_hook('EvalHook'), '_period', 0) (line 4)"]
