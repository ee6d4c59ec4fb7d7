"""BLEUEvaluator and RegEvaluator against numbers computed here by their textbook definitions."""
import math
from collections import Counter

import numpy as np
import oneflow as flow
import pytest

from libai.config import LazyCall, instantiate
from libai.evaluation import BLEUEvaluator, RegEvaluator

CANDIDATES = [
    "the cat sat on the mat today".split(),
    "a quick brown fox jumps over the lazy dog".split(),
    "there is a book on the desk".split(),
]
REFERENCES = [
    ["the cat sat on the mat".split(), "a cat was sitting on the mat today".split()],
    ["the quick brown fox jumps over the lazy dog".split()],
    ["there is a red book on the desk".split(), "a book lies on the desk".split()],
]


def reference_bleu(candidates, references, max_n=4):
    """Papineni et al.: clipped n-gram precisions pooled over the corpus, geometric mean,
    brevity penalty from the reference length closest to each candidate (shorter on ties)."""
    log_precision = 0.0
    for n in range(1, max_n + 1):
        matched = total = 0
        for cand, refs in zip(candidates, references):
            grams = Counter(tuple(cand[i:i + n]) for i in range(len(cand) - n + 1))
            best = Counter()
            for ref in refs:
                for gram, count in Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1)).items():
                    best[gram] = max(best[gram], count)
            matched += sum(min(count, best[gram]) for gram, count in grams.items())
            total += sum(grams.values())
        log_precision += math.log(matched / total) / max_n
    c = sum(len(cand) for cand in candidates)
    r = sum(min((abs(len(ref) - len(cand)), len(ref)) for ref in refs)[1]
            for cand, refs in zip(candidates, references))
    penalty = 1.0 if c > r else math.exp(1 - r / c)
    return penalty * math.exp(log_precision)


def test_bleu_one_sample_per_call_equals_the_definition():
    evaluator = BLEUEvaluator()
    for cand, refs in zip(CANDIDATES, REFERENCES):
        evaluator.process({"reference": refs}, {"candidate": cand})
    result = evaluator.evaluate()
    expected = reference_bleu(CANDIDATES, REFERENCES)
    assert list(result) == ["bleu_score"]
    assert result["bleu_score"] == pytest.approx(expected, rel=1e-12)
    assert 0.3 < expected < 0.9  # a partial match: every n-gram order contributes


def test_bleu_batches_of_id_tensors_with_padding_removed_give_the_same_score():
    vocab = {w: i + 2 for i, w in enumerate(sorted({w for s in CANDIDATES for w in s}
                                                   | {w for rs in REFERENCES for r in rs for w in r}))}
    pad = 0

    def ids(words, length):
        return [vocab[w] for w in words] + [pad] * (length - len(words))

    evaluator = LazyCall(BLEUEvaluator)(ignore_ids=[pad])
    evaluator = instantiate(evaluator)
    candidates = flow.tensor([ids(c, 10) for c in CANDIDATES[:2]])  # a batch of two, padded
    references = [[ids(r, len(r)) for r in refs] for refs in REFERENCES[:2]]
    evaluator.process({"reference": references}, {"candidate": candidates})
    evaluator.process({"reference": [ids(REFERENCES[2][0], 12)]}, {"candidate": flow.tensor(ids(CANDIDATES[2], 9))})
    expected = reference_bleu(CANDIDATES, REFERENCES)
    assert evaluator.evaluate()["bleu_score"] == pytest.approx(
        reference_bleu(CANDIDATES, REFERENCES[:2] + [REFERENCES[2][:1]]), rel=1e-12)
    assert expected != evaluator.evaluate()["bleu_score"]  # the dropped reference mattered


def test_bleu_identical_text_scores_one_and_reset_forgets():
    evaluator = BLEUEvaluator()
    evaluator.process({"reference": "the cat sat on the mat"}, {"candidate": "the cat sat on the mat"})
    assert evaluator.evaluate()["bleu_score"] == pytest.approx(1.0)
    evaluator.reset()
    with pytest.raises(RuntimeError, match="no samples"):
        evaluator.evaluate()


def test_bleu_batch_with_wrong_number_of_references_names_the_problem():
    with pytest.raises(ValueError, match="2 candidates but 1 reference entries"):
        BLEUEvaluator().process({"reference": [[["a", "b"]]]}, {"candidate": [["a", "b"], ["c"]]})


def ranks(values):
    return np.argsort(np.argsort(values)).astype(np.float64)


def test_reg_evaluator_regression_head_equals_numpy_correlations():
    rng = np.random.default_rng(0)
    labels = rng.uniform(0, 5, size=23)
    preds = labels + rng.normal(0, 1.0, size=23)
    evaluator = RegEvaluator()
    for start in range(0, 23, 8):  # batches of 8, 8, 7; scores [B, 1] like a 1-output head
        part = slice(start, start + 8)
        evaluator.process({"labels": flow.tensor(labels[part])},
                          {"prediction_scores": flow.tensor(preds[part]).reshape(-1, 1)})
    result = evaluator.evaluate()
    pearson = np.corrcoef(preds, labels)[0, 1]
    spearman = np.corrcoef(ranks(preds), ranks(labels))[0, 1]
    assert list(result) == ["pearson", "spearman", "corr"]
    assert result["pearson"] == pytest.approx(pearson, rel=1e-10)
    assert result["spearman"] == pytest.approx(spearman, rel=1e-10)
    assert result["corr"] == pytest.approx((pearson + spearman) / 2, rel=1e-10)


def test_reg_evaluator_with_class_scores_correlates_the_argmax_as_libai_does():
    scores = flow.tensor([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.0, 0.2, 0.7], [0.3, 0.4, 0.2]])
    labels = flow.tensor([1.0, 0.0, 1.5, 2.0])
    evaluator = RegEvaluator()
    evaluator.process({"labels": labels}, {"prediction_scores": scores})
    preds = np.array([1.0, 0.0, 2.0, 1.0])
    assert evaluator.evaluate()["pearson"] == pytest.approx(np.corrcoef(preds, labels.numpy())[0, 1])


def test_reg_evaluator_without_spread_reports_nan_not_a_crash():
    evaluator = RegEvaluator()
    evaluator.process({"labels": flow.tensor([1.0, 2.0])}, {"prediction_scores": flow.tensor([3.0, 3.0])})
    assert all(math.isnan(v) for v in evaluator.evaluate().values())


def test_ppl_evaluator_reads_lm_labels_of_bert_and_t5_batches():
    from libai.evaluation import PPLEvaluator

    logits = flow.tensor(np.random.default_rng(1).normal(size=(2, 3, 5)), dtype=flow.float32)
    labels = flow.tensor([[1, 2, 3], [4, 0, 1]])
    mask = flow.tensor([[1, 0, 1], [1, 1, 0]])
    results = []
    for inputs, evaluator in (({"labels": labels, "loss_mask": mask}, PPLEvaluator()),
                              ({"lm_labels": labels, "loss_mask": mask}, PPLEvaluator()),
                              ({"tgt": labels, "loss_mask": mask}, PPLEvaluator(label_field="tgt"))):
        evaluator.process(inputs, {"prediction_scores": logits})
        results.append(evaluator.evaluate()["PPL"])
    log_probs = logits.numpy() - np.log(np.exp(logits.numpy()).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels.numpy()[..., None], -1)[..., 0]
    expected = math.exp(-(picked * mask.numpy()).sum() / mask.numpy().sum())
    assert results == pytest.approx([expected] * 3, rel=1e-5)
