"""The key/value cache: cached generation equals full recomputation, costs one token per step,
and the return conventions (prompt kept, finished rows padded) hold, on tiny random models."""
import numpy as np
import oneflow as flow
import pytest

from tiny_models import PAD, left_padded, prompts, tiny_gpt, tiny_t5

SETTINGS = {
    "greedy": dict(),
    "beam3": dict(num_beams=3),
    "beam3_two_returned": dict(num_beams=3, num_return_sequences=2),
    "repetition": dict(repetition_penalty=1.5),
    "beam_repetition": dict(num_beams=2, repetition_penalty=1.3),
}


@pytest.fixture(scope="module")
def gpt():
    return tiny_gpt()


@pytest.fixture(scope="module")
def t5():
    return tiny_t5()


def _both(model, ids, **kwargs):
    cached = model.generate(ids, max_new_tokens=8, use_cache=True, **kwargs).numpy()
    full = model.generate(ids, max_new_tokens=8, use_cache=False, **kwargs).numpy()
    return cached, full


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_gpt_cached_equals_uncached(gpt, name):
    ids, mask = left_padded(1)
    cached, full = _both(gpt, ids, attention_mask=mask, pad_token_id=PAD, **SETTINGS[name])
    np.testing.assert_array_equal(cached, full)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_t5_cached_equals_uncached(t5, name):
    ids, mask = prompts(2, length=6), np.ones((2, 6), dtype=np.int64)
    mask[1, -2:] = 0
    cached, full = _both(t5, ids, attention_mask=mask, pad_token_id=PAD,
                         decoder_start_token_id=PAD, **SETTINGS[name])
    np.testing.assert_array_equal(cached, full)


def test_left_padding_gives_each_prompt_its_unpadded_continuation(gpt):
    """A padded row continues exactly as the same prompt alone (positions count from its first
    real token, padding is masked)."""
    ids, mask = left_padded(3)
    batched = gpt.generate(ids, attention_mask=mask, max_new_tokens=6, pad_token_id=PAD).numpy()
    alone = gpt.generate(ids[1:, 2:], max_new_tokens=6).numpy()
    np.testing.assert_array_equal(batched[1, 2:], alone[0])


def _record_lengths(monkeypatch, module):
    """The sequence length of every call of ``module`` (its first argument's dim 1)."""
    lengths, forward = [], module.forward

    def counting(*args, **kwargs):
        lengths.append(int(args[0].shape[1]))
        return forward(*args, **kwargs)

    monkeypatch.setattr(module, "forward", counting)
    return lengths


def test_cached_generation_feeds_one_new_token_per_step(gpt, monkeypatch):
    """n new tokens cost one pass over the prompt (which yields token 1), then n - 1 passes
    of exactly one token each; without the cache every pass re-reads the whole sequence."""
    n, ids = 7, prompts(4, batch=1, length=5)
    lengths = _record_lengths(monkeypatch, gpt.GPT_model.embeddings)
    gpt.generate(ids, max_new_tokens=n, use_cache=True)
    assert lengths == [5] + [1] * (n - 1)
    lengths.clear()
    gpt.generate(ids, max_new_tokens=n, use_cache=False)
    assert lengths == list(range(5, 5 + n))


def test_t5_runs_the_encoder_once_and_the_decoder_one_token_per_step(t5, monkeypatch):
    encoder = _record_lengths(monkeypatch, t5.t5_model.encoder.layers[0])
    decoder = _record_lengths(monkeypatch, t5.t5_model.decoder.layers[0])
    t5.generate(prompts(5, batch=1, length=6), max_new_tokens=5, decoder_start_token_id=PAD)
    assert encoder == [6]
    assert decoder == [1] * 5


def test_return_conventions(gpt, t5):
    ids = prompts(6, batch=1, length=4)
    out = gpt.generate(ids, max_new_tokens=3).numpy()
    assert out.shape == (1, 7) and (out[:, :4] == ids).all()
    out = t5.generate(ids, max_new_tokens=3, decoder_start_token_id=5).numpy()
    assert out.shape == (1, 4) and out[0, 0] == 5


def test_finished_rows_are_padded_and_generation_stops_when_all_finish(gpt):
    ids = prompts(7, batch=2, length=4)
    free = gpt.generate(ids, max_new_tokens=6).numpy()
    eos = int(free[0, 5])  # row 0's second new token becomes its end
    out = gpt.generate(ids, max_new_tokens=6, eos_token_id=eos, pad_token_id=PAD).numpy()
    row0_end = list(free[0, 4:]).index(eos) + 4
    assert out[0, row0_end] == eos and (out[0, row0_end + 1:] == PAD).all()
    # when every row has ended, the loop stops before max_new_tokens
    single = gpt.generate(ids[:1], max_new_tokens=6, eos_token_id=eos, pad_token_id=PAD).numpy()
    assert single.shape[1] == row0_end + 1 and single[0, -1] == eos


def test_beam_search_scores_at_least_as_high_as_greedy(gpt):
    """Without EOS every hypothesis has the same length, so beam search's best total
    log-probability (recomputed here from the model's logits) is >= greedy search's."""
    ids = prompts(8, batch=1, length=4)

    def total_log_prob(tokens):
        logits = gpt(flow.tensor(tokens))["prediction_scores"].numpy()[0].astype(np.float64)
        top = logits.max(-1, keepdims=True)
        logp = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
        return sum(logp[t - 1, tokens[0, t]] for t in range(4, tokens.shape[1]))

    greedy = gpt.generate(ids, max_new_tokens=5).numpy()
    beam = gpt.generate(ids, max_new_tokens=5, num_beams=4).numpy()
    assert total_log_prob(beam) >= total_log_prob(greedy) - 1e-5


def test_input_errors_name_the_fix(gpt):
    with pytest.raises(ValueError, match="max_new_tokens"):
        gpt.generate(prompts(0), max_length=3)
    with pytest.raises(ValueError, match="attention_mask has shape"):
        gpt.generate(prompts(0), attention_mask=np.ones((2, 3)), max_new_tokens=2)
    with pytest.raises(ValueError, match="num_return_sequences"):
        gpt.generate(prompts(0), max_new_tokens=2, num_beams=2, num_return_sequences=3)


@pytest.mark.parametrize("setting", ["greedy", "beam3"])
def test_one_process_decoding_on_local_tensors_matches_global(gpt, t5, setting, monkeypatch):
    """A one-process model decodes on plain local tensors: same tokens as the global path, and
    the model's parameters are the same global objects afterwards."""
    import contextlib

    from libai.models.utils.generation import mixin

    for model, extra in ((gpt, {}), (t5, dict(decoder_start_token_id=PAD))):
        ids, kwargs = prompts(), dict(SETTINGS[setting], **extra)
        params = list(model.parameters())
        seen = []
        first = next(m for m in model.modules() if hasattr(m, "layout"))
        forward = first.forward

        def recording(x, *args, **kwargs):
            seen.append(x.is_global)
            return forward(x, *args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(first, "forward", recording)
            fast = model.generate(ids, max_new_tokens=6, **kwargs).numpy()
            patch.setattr(mixin, "_decoding_tensors", lambda m: contextlib.nullcontext(m))
            slow = model.generate(ids, max_new_tokens=6, **kwargs).numpy()
        np.testing.assert_array_equal(fast, slow)
        half = len(seen) // 2  # the first layer's inputs: local in the fast run, global after
        assert half > 0 and not any(seen[:half]) and all(seen[half:])
        assert [p is q for p, q in zip(params, model.parameters())] == [True] * len(params)
        assert all(p.is_global for p in model.parameters())
