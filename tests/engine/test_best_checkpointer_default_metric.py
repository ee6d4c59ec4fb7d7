"""LiBai's PaLM config evaluates perplexity but keeps the common config's default
``eval_metric="Acc@1"``. LiBai then keeps no best model and trains on; so does libai, with a
warning. A metric the config chose itself and the evaluation does not report stays an error
(tests/engine/test_hook_cadence.py)."""
import logging

from libai.engine import hooks
from libai.engine.trainer import TrainerBase


class Idle(TrainerBase):
    def run_step(self):
        pass


class Saves:
    def __init__(self):
        self.saved = []

    def save(self, name, tag_last_checkpoint=True, iteration=None, **extra):
        self.saved.append(name)


def test_the_default_metric_missing_keeps_no_best_model_and_warns_once(caplog):
    evaluations = []
    saves = Saves()
    trainer = Idle()
    trainer.register_hooks([
        hooks.EvalHook(2, lambda: evaluations.append(1) or {"lm_loss_PPL": 3.5}),
        hooks.BestCheckpointer(2, saves, "Acc@1", "max"),
    ])
    with caplog.at_level(logging.WARNING):
        trainer.train(0, 6)
    assert len(evaluations) == 3 and trainer.iter == 6  # trained to the end
    assert saves.saved == []
    warnings = [r for r in caplog.records if "no best model is kept" in r.getMessage()]
    assert len(warnings) == 1
    assert "['lm_loss_PPL']" in warnings[0].getMessage()
