"""Corpus BLEU of generated token sequences against reference translations."""
from collections import OrderedDict
from typing import Any, Dict, List, Sequence

from libai.evaluation.evaluator import DatasetEvaluator, require_field

__all__ = ["BLEUEvaluator"]

Tokens = List[Any]


class BLEUEvaluator(DatasetEvaluator):
    """Corpus-level BLEU (Papineni et al., 2002) as NLTK's ``corpus_bleu`` computes it, reported
    as ``bleu_score`` in ``[0, 1]`` (LiBai's name and scale; an ``eval_metric``).

    Reads ``outputs["candidate"]`` and ``inputs["reference"]``, in either of two forms:

    - one sample per call (LiBai's form): ``candidate`` is one token sequence (a list of tokens,
      a 1-D tensor of ids, or a string split on whitespace) and ``reference`` is a list of its
      reference sequences (or one sequence);
    - a batch per call: ``candidate`` is a list of sequences or a 2-D tensor ``[B, L]`` and
      ``reference`` has one entry of the form above per sample.

    A list of strings is one sequence of tokens, never a batch of sentences. Tokens are compared
    as they are (ids or strings): tokenize candidates and references alike.
    ``ignore_ids`` (e.g. the padding and end-of-sequence ids) are removed from both first.

    Args:
        weights: the n-gram weights (default: uniform over 1- to 4-grams).
        ignore_ids: tokens to drop from candidates and references before scoring.
    """

    def __init__(self, weights: Sequence[float] = (0.25, 0.25, 0.25, 0.25),
                 ignore_ids: Sequence[Any] = ()) -> None:
        self.weights = tuple(weights)
        self.ignore = set(ignore_ids)
        self.reset()

    def reset(self) -> None:
        self._candidates: List[Tokens] = []
        self._references: List[List[Tokens]] = []

    def process(self, inputs: Dict[str, Any], outputs: Dict[str, Any]) -> None:
        candidate = _as_list(require_field(outputs, "candidate", "outputs", "BLEUEvaluator"))
        reference = _as_list(require_field(inputs, "reference", "inputs", "BLEUEvaluator"))
        if _is_sequence_of_sequences(candidate):  # a batch
            if len(reference) != len(candidate):
                raise ValueError(
                    f"BLEUEvaluator: {len(candidate)} candidates but {len(reference)} reference "
                    "entries; give one entry (a list of references) per candidate"
                )
            pairs = zip(candidate, reference)
        else:
            pairs = [(candidate, reference)]
        for cand, refs in pairs:
            refs = _as_list(refs)
            refs = refs if _is_sequence_of_sequences(refs) else [refs]
            self._candidates.append(self._clean(cand))
            self._references.append([self._clean(r) for r in refs])

    def _clean(self, tokens: Any) -> Tokens:
        tokens = _as_list(tokens)
        return [t for t in tokens if t not in self.ignore]

    def evaluate(self) -> "OrderedDict[str, float]":
        from nltk.translate.bleu_score import corpus_bleu  # needed by this evaluator only

        if not self._candidates:
            raise RuntimeError("BLEUEvaluator has no samples to evaluate: no batch was processed")
        score = corpus_bleu(self._references, self._candidates, weights=self.weights)
        return OrderedDict([("bleu_score", float(score))])


def _as_list(value: Any) -> Any:
    """Tensors and arrays become (nested) Python lists; a string becomes its whitespace tokens."""
    if isinstance(value, str):
        return value.split()
    if hasattr(value, "tolist"):
        return value.tolist()
    return list(value) if isinstance(value, tuple) else value


def _is_sequence_of_sequences(value: Any) -> bool:
    return (isinstance(value, list) and len(value) > 0
            and all(isinstance(v, (list, tuple, str)) or hasattr(v, "tolist") for v in value)
            and not all(isinstance(v, str) for v in value))
