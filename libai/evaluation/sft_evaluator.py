"""Response-only loss and perplexity of a fine-tuned language model on a held-out split."""
import math
from collections import OrderedDict

from libai.evaluation.ppl_evaluator import PPLEvaluator

__all__ = ["ResponseLossEvaluator"]


class ResponseLossEvaluator(PPLEvaluator):
    """The mean cross entropy over response tokens (``response_loss``), its ``exp``
    (``response_PPL``) and the number of tokens counted (``response_tokens``).

    Fine-tuning datasets (:mod:`libai.data.datasets.instruction`, ``chat``, ``packing``) label
    prompt and padding positions with -100, so the tokens counted are exactly the responses':
    the figure is comparable before and after fine-tuning and between packed and unpacked
    batches. The mean is over tokens of the whole split, not over batches. Use it as
    ``train.evaluation.evaluator`` with ``eval_metric="response_loss"`` (lower is better).
    """

    def evaluate(self) -> "OrderedDict[str, float]":
        if self._tokens == 0:
            raise RuntimeError(
                "ResponseLossEvaluator counted no response token: the held-out split is empty, "
                "or every label is -100 (check the dataset's skipped-sample warnings)"
            )
        loss = self._nll_sum / self._tokens
        return OrderedDict([("response_loss", loss), ("response_PPL", math.exp(min(loss, 50.0))),
                            ("response_tokens", float(self._tokens))])
