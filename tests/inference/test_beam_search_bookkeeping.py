"""BeamSearch's bookkeeping, step by step, on log-probabilities chosen so that the outcome under
Hugging Face's beam-search rules can be worked out by hand: a hypothesis that ends in EOS among
the first ``num_beams`` candidates is finished with its score divided by its generated length;
the search stops once ``num_beams`` hypotheses finished and the best running one, normalised at
the current length, cannot beat the worst finished; shorter results are filled."""
import math

import numpy as np
import oneflow as flow

from libai.models.utils.generation import BeamSearch

PAD, EOS = 0, 1


def _log_probs(*rows):
    return flow.tensor(np.log(np.array(rows, dtype=np.float32)))


def test_hypotheses_ending_early_finish_rank_and_stop_the_search():
    search = BeamSearch(flow.tensor([[3], [3]]), num_beams=2, max_length=6, eos_token_ids=[EOS],
                        fill_token_id=PAD)
    # step 1: only beam 0 counts (the beams start identical); EOS is its best continuation
    parents = search.step(_log_probs([0.05, 0.6, 0.25, 0.1], [0.05, 0.6, 0.25, 0.1]))
    assert parents.numpy().tolist() == [0, 0]
    assert search.running_tokens().numpy().tolist() == [[3, 2], [3, 3]]  # EOS left the running set
    assert not search.is_done()  # one finished hypothesis; two are needed
    # step 2: "3 2" ends in EOS (total log .25 + log .5); "3 2 2" and "3 2 3" (log .25 + log .2)
    # beat everything from "3 3", so both running beams continue beam 0
    parents = search.step(_log_probs([0.1, 0.5, 0.2, 0.2], [0.1, 0.1, 0.4, 0.4]))
    assert parents.numpy().tolist() == [0, 0]
    assert search.running_tokens().numpy().tolist() == [[3, 2, 2], [3, 2, 3]]
    # finished: "3 1" at log .6 / 1 and "3 2 1" at (log .25 + log .5) / 2; the best running one,
    # (log .25 + log .2) / 2, is worse than both: nothing can improve
    worst_finished = (math.log(0.25) + math.log(0.5)) / 2
    assert (math.log(0.25) + math.log(0.2)) / 2 < worst_finished < math.log(0.6)
    assert search.is_done()
    assert search.result(1).numpy().tolist() == [[3, 1]]
    assert search.result(2).numpy().tolist() == [[3, 1, PAD], [3, 2, 1]]  # best first, filled


def test_without_eos_every_beam_ends_at_the_maximum_length_best_score_first():
    search = BeamSearch(flow.tensor([[7], [7]]), num_beams=2, max_length=3, eos_token_ids=[],
                        fill_token_id=PAD)
    search.step(_log_probs([0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4]))
    assert search.running_tokens().numpy().tolist() == [[7, 3], [7, 2]]
    # from "7 3" (log .4) token 1 at .5 gives log .2; from "7 2" (log .3) token 0 at .9 gives log .27
    parents = search.step(_log_probs([0.2, 0.5, 0.2, 0.1], [0.9, 0.05, 0.03, 0.02]))
    assert parents.numpy().tolist() == [1, 0]
    assert search.is_done()
    assert search.result(2).numpy().tolist() == [[7, 2, 0], [7, 3, 1]]
