"""Learning BPE merges from word counts: the core shared by the BPE and WordPiece trainers.

Starting from words written as symbol sequences, repeatedly join the adjacent pair of symbols
that occurs most often (counting each word as often as it appears in the corpus). Ties go to
the pair that sorts first, so the result depends only on the counts, never on dict or file
order: training twice gives byte-identical vocabularies.

Recounting every pair after each merge would cost a pass over the corpus per merge. Instead the
counts are updated only in the words that contain the merged pair, and a heap with lazy deletion
finds the next best pair: an entry whose stored count went stale is re-filed with its true count
when it surfaces.
"""
import heapq
from collections import Counter
from typing import Callable, Dict, Iterable, List, Mapping, Sequence, Set, Tuple

__all__ = ["learn_merges"]

Pair = Tuple[str, str]


class _PairIndex:
    """Pair counts, and which words hold each pair, for a fixed list of weighted words."""

    def __init__(self, words: List[List[str]], weights: List[int]) -> None:
        self.words = words
        self.weights = weights
        self.counts: Dict[Pair, int] = Counter()
        self.holders: Dict[Pair, Set[int]] = {}
        for index, word in enumerate(words):
            for pair in zip(word, word[1:]):
                self.counts[pair] += weights[index]
                self.holders.setdefault(pair, set()).add(index)
        self.heap: List[Tuple[int, Pair]] = [(-count, pair) for pair, count in self.counts.items()]
        heapq.heapify(self.heap)

    def best(self) -> Tuple[int, Pair]:
        """The most frequent pair (ties: smallest pair) and its count; (0, ("", "")) if none."""
        while self.heap:
            negative, pair = heapq.heappop(self.heap)
            count = self.counts.get(pair, 0)
            if count == -negative:
                return count, pair
            if count > 0:
                heapq.heappush(self.heap, (-count, pair))
        return 0, ("", "")

    def merge(self, pair: Pair, symbol: str) -> None:
        """Replace every occurrence of ``pair`` by ``symbol`` and update the counts."""
        for index in self.holders.pop(pair, set()):
            old = self.words[index]
            new = _merge_word(old, pair, symbol)
            self.words[index] = new
            self._reindex(index, Counter(zip(old, old[1:])), Counter(zip(new, new[1:])))
        self.counts.pop(pair, None)

    def _reindex(self, index: int, old: Counter, new: Counter) -> None:
        weight = self.weights[index]
        for pair in old.keys() | new.keys():
            delta = (new[pair] - old[pair]) * weight
            if delta == 0:
                continue
            count = self.counts.get(pair, 0) + delta
            if count > 0:
                self.counts[pair] = count
            else:
                self.counts.pop(pair, None)
            if delta > 0:
                heapq.heappush(self.heap, (-count, pair))
            if new[pair] == 0:
                holders = self.holders.get(pair)
                if holders is not None:
                    holders.discard(index)
            else:
                self.holders.setdefault(pair, set()).add(index)


def _merge_word(word: List[str], pair: Pair, symbol: str) -> List[str]:
    left, right = pair
    merged: List[str] = []
    index = 0
    while index < len(word):
        if index + 1 < len(word) and word[index] == left and word[index + 1] == right:
            merged.append(symbol)
            index += 2
        else:
            merged.append(word[index])
            index += 1
    return merged


def learn_merges(
    word_counts: Mapping[Sequence[str], int],
    new_symbols: int,
    join: Callable[[str, str], str] = lambda left, right: left + right,
    min_frequency: int = 2,
    known_symbols: Iterable[str] = (),
) -> List[Pair]:
    """Learn merges until ``new_symbols`` symbols not in ``known_symbols`` have been created,
    or no pair occurs at least ``min_frequency`` times.

    Args:
        word_counts: each word as a sequence of initial symbols -> how often it occurs.
        new_symbols: how many new vocabulary entries to create.
        join: the symbol a merged pair becomes (WordPiece drops the right side's ``##``).
        min_frequency: pairs rarer than this are never merged.
        known_symbols: symbols already in the vocabulary; a merge that recreates one of them
            is kept (it is needed to rebuild the segmentation) but does not count.

    Returns:
        The merges in the order learned, which is their priority when encoding.
    """
    if new_symbols < 0:
        raise ValueError(f"new_symbols must be >= 0, got {new_symbols}")
    ordered = sorted(word_counts.items())  # a fixed order makes the work reproducible
    index = _PairIndex([list(word) for word, _ in ordered], [count for _, count in ordered])
    known = set(known_symbols)
    merges: List[Pair] = []
    created = 0
    while created < new_symbols:
        count, pair = index.best()
        if count < max(min_frequency, 1):
            break
        symbol = join(*pair)
        merges.append(pair)
        if symbol not in known:
            known.add(symbol)
            created += 1
        index.merge(pair, symbol)
    return merges
