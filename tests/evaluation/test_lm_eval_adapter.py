"""lm_eval's model interface over a libai causal LM: log-likelihoods equal a direct computation
with the model, batched with padding or not; ``generate_until`` cuts at the first stop string."""
import os
import sys

import numpy as np
import oneflow as flow
import pytest
from lm_eval.api.instance import Instance

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "data"))
from sft_helpers import load_tokenizer, train_tokenizer  # noqa: E402

from libai.evaluation.lm_eval_adapter import LibaiLM  # noqa: E402
from libai.models import LlamaForCausalLM  # noqa: E402


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    from libai.utils.distributed import ParallelLayout

    tok = load_tokenizer(train_tokenizer(str(tmp_path_factory.mktemp("lm_eval_tok"))))
    with ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0):
        flow.manual_seed(0)
        model = LlamaForCausalLM(dict(vocab_size=300, hidden_size=32, hidden_layers=2,
                                      num_attention_heads=4, intermediate_size=48,
                                      max_position_embeddings=64))
    return LibaiLM(model=model, tokenizer=tok, batch_size=3, max_gen_toks=12)


def _direct_log_probs(lm, ids):
    """log p(ids[t] | ids[:t]) for t >= 1, from one unpadded forward of the model."""
    logits = lm.model.eval()(flow.tensor([ids]))["prediction_scores"].numpy()[0]
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return np.array([log_probs[t - 1, ids[t]] for t in range(1, len(ids))]), log_probs


def _requests(kind, args):
    return [Instance(kind, {}, a, i) for i, a in enumerate(args)]


def test_loglikelihood_equals_a_direct_computation(lm):
    pairs = [("What does math.sqrt do?", " Return the square root of x."),
             ("Explain", " paths"), ("", "Return the absolute value.")]
    results = lm.loglikelihood(_requests("loglikelihood", pairs))
    tok = lm.tokenizer
    for (context, continuation), (score, greedy) in zip(pairs, results):
        if context:  # lm_eval encodes context + continuation together and splits at the context
            ctx, whole = tok.encode(context), tok.encode(context + continuation)
        else:  # an empty context is the prefix token (BOS)
            ctx = [tok.bos_token_id]
            whole = ctx + tok.encode(continuation)
        per_token, log_probs = _direct_log_probs(lm, whole)
        n = len(whole) - len(ctx)
        assert score == pytest.approx(float(per_token[-n:].sum()), rel=1e-5, abs=1e-5)
        argmax = log_probs[len(ctx) - 1:len(whole) - 1].argmax(-1)
        assert greedy == bool((argmax == np.array(whole[len(ctx):])).all())


def test_greedy_continuation_is_reported_greedy(lm):
    tok = lm.tokenizer
    ctx = tok.encode("What does math.sqrt do?")
    ids = list(ctx)
    for _ in range(3):
        ids.append(int(_direct_log_probs(lm, ids)[1][-1].argmax()))
    (score, greedy), = lm._loglikelihood_tokens([(None, ctx, ids[len(ctx):])])
    assert greedy and score == pytest.approx(float(_direct_log_probs(lm, ids)[0][-3:].sum()), rel=1e-5)


def test_loglikelihood_rolling_of_a_short_document_is_its_total_log_probability(lm):
    text = "Return the square root of x."
    (total,) = lm.loglikelihood_rolling(_requests("loglikelihood_rolling", [(text,)]))
    ids = [lm.tokenizer.bos_token_id] + lm.tokenizer.encode(text)
    assert total == pytest.approx(float(_direct_log_probs(lm, ids)[0].sum()), rel=1e-5)


def test_generate_until_cuts_at_the_first_stop_string(lm):
    tok = lm.tokenizer
    context = "What does math.sqrt do?"
    prompt = tok.encode(context)
    tokens = lm.model.generate(flow.tensor([prompt]), max_new_tokens=12,
                               eos_token_id=tok.eos_token_id, pad_token_id=tok.eos_token_id)
    full = tok.decode(tokens[0, len(prompt):].tolist())
    stop = full[len(full) // 2:len(full) // 2 + 2]  # a stop string inside the greedy output
    assert stop and full.index(stop) < len(full)
    (free, cut) = lm.generate_until(_requests("generate_until", [
        (context, {"until": [], "max_gen_toks": 12}),
        (context, {"until": ["never there", stop], "max_gen_toks": 12, "do_sample": False}),
    ]))
    assert free == full
    assert cut == full[:full.index(stop)]


def test_batched_generation_equals_one_request_at_a_time(lm):
    contexts = ["What does math.sqrt do?", "Explain", "And abs? Return the absolute value"]
    requests = _requests("generate_until", [(c, {"until": ["\n"], "max_gen_toks": 6}) for c in contexts])
    batched = lm.generate_until(requests)  # batch_size=3: one left-padded batch
    single = LibaiLM(model=lm.model, tokenizer=lm.tokenizer, batch_size=1)
    assert batched == single.generate_until(requests)
