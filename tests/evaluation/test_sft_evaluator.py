"""The response-only loss of a held-out split equals the model's own training loss on it."""
import math
import os
import sys

import oneflow as flow
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "data"))
from sft_helpers import load_tokenizer, train_tokenizer  # noqa: E402

from libai.data.datasets import ChatDataset  # noqa: E402
from libai.data.structures import Instance  # noqa: E402
from libai.evaluation import ResponseLossEvaluator  # noqa: E402
from libai.models import LlamaForCausalLM  # noqa: E402
from libai.utils.distributed import ttol  # noqa: E402

CHATS = [[{"role": "user", "content": q}, {"role": "assistant", "content": a}] for q, a in (
    ("What does math.sqrt do?", "Return the square root of x."),
    ("And abs?", "Return the absolute value of the argument."),
    ("What does os.path.join return?", "A path."),
)]


def test_response_loss_is_the_mean_over_response_tokens(local_layout, tmp_path):
    tok = load_tokenizer(train_tokenizer(str(tmp_path / "tok")))
    data = ChatDataset([{"messages": m} for m in CHATS], tok, 96)
    flow.manual_seed(0)
    model = LlamaForCausalLM(dict(vocab_size=300, hidden_size=32, hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=48,
                                  max_position_embeddings=96))
    evaluator = ResponseLossEvaluator()
    for i in range(len(data)):  # one sample per batch: the mean is still over all tokens
        batch = Instance.stack([data[i]]).to_global(local_layout).get_fields()
        with flow.no_grad():
            scores = model.eval()(batch["input_ids"])["prediction_scores"]
        # local tensors, as inference_on_dataset hands them to evaluators
        evaluator.process({"labels": ttol(batch["labels"])}, {"prediction_scores": ttol(scores)})
    result = evaluator.evaluate()
    whole = Instance.stack([data[i] for i in range(len(data))]).to_global(local_layout).get_fields()
    with flow.no_grad():
        loss = float(model.train()(**whole)["lm_loss"].to_local().numpy())
    assert result["response_loss"] == pytest.approx(loss, rel=1e-5)
    assert result["response_PPL"] == pytest.approx(math.exp(loss), rel=1e-5)
    assert result["response_tokens"] == sum(s.num_trained for s in data.samples)
    with pytest.raises(RuntimeError, match="counted no response token"):
        ResponseLossEvaluator().evaluate()
