"""``PPLEvaluator`` on a model that returns only its loss in eval mode (LiBai's SFT models:
``{"lm_loss": loss}``): LiBai's rule, the mean over batches of ``exp(min(20, loss))``."""
import math

import oneflow as flow
import pytest

from libai.evaluation import PPLEvaluator


def test_each_loss_output_becomes_a_ppl_averaged_over_batches():
    evaluator = PPLEvaluator()
    for loss in (1.0, 2.0, 25.0):  # the last one is capped at exp(20), as in LiBai
        evaluator.process({"input_ids": flow.zeros(2, 3)}, {"lm_loss": flow.tensor(loss)})
    result = evaluator.evaluate()
    assert list(result) == ["lm_loss_PPL"]
    assert result["lm_loss_PPL"] == pytest.approx((math.e + math.exp(2.0) + math.exp(20.0)) / 3)
    evaluator.reset()
    with pytest.raises(RuntimeError, match="no tokens to evaluate"):
        evaluator.evaluate()


def test_logits_still_take_the_token_level_path():
    evaluator = PPLEvaluator()
    logits = flow.zeros(1, 2, 4)  # uniform over 4 classes: perplexity 4
    evaluator.process({"labels": flow.tensor([[1, 3]])},
                      {"prediction_scores": logits, "lm_loss": flow.tensor(9.0)})
    assert evaluator.evaluate() == {"PPL": pytest.approx(4.0, rel=1e-5)}
