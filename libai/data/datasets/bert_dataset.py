"""BERT pre-training samples: masked LM over a sentence pair, with a pair-level label.

A sample is ``[CLS] A [SEP] B [SEP]`` padded to ``max_seq_length``, where A and B are runs of
whole sentences of one document (see :mod:`libai.data.data_utils.sentence_samples`):

* next-sentence prediction (``sop=False``): half the time B is the true continuation of A
  (``ns_labels = 0``), half the time B comes from a random *other* document (``ns_labels = 1``);
* sentence-order prediction (``sop=True``): B is always the continuation, but half the time A
  and B are swapped (``ns_labels = 1``);
* ``binary_head=False``: one segment ``[CLS] A [SEP]`` and ``ns_labels = 0``.

Then 15% of the text tokens (never [CLS]/[SEP]/padding) are picked for prediction: 80% become
``[MASK]``, 10% a random token, 10% stay (:func:`libai.data.data_utils.masking.mask_tokens`).

Label convention: ``lm_labels`` holds the original id at picked positions and **0** elsewhere,
and ``loss_mask`` is 1 exactly at picked positions. 0 rather than -1 because OneFlow's sparse
cross-entropy aborts the process on a negative label; the loss must be weighted by
``loss_mask``.
"""
import logging
import re
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np
import oneflow as flow

from libai.data.data_utils.indexed_dataset import MMapIndexedDataset
from libai.data.data_utils.masking import _random_regular_tokens as random_regular_tokens
from libai.data.data_utils.masking import mask_tokens, num_to_mask
from libai.data.data_utils.sentence_dataset import (
    SentenceSampleDataset,
    require_token_ids,
    resolve_num_samples,
)
from libai.data.structures import DistTensorData, Instance

__all__ = ["BertDataset", "truncate_pair"]

logger = logging.getLogger(__name__)


def truncate_pair(a: np.ndarray, b: np.ndarray, budget: int, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    """Trim the longer of ``a``/``b`` one token at a time, at its front or back at random,
    until both fit ``budget`` (random ends, so the model does not learn where text is cut)."""
    spans = [[0, len(a)], [0, len(b)]]
    while (spans[0][1] - spans[0][0]) + (spans[1][1] - spans[1][0]) > budget:
        longer = spans[0] if spans[0][1] - spans[0][0] >= spans[1][1] - spans[1][0] else spans[1]
        if rng.random() < 0.5:
            longer[0] += 1
        else:
            longer[1] -= 1
    return a[spans[0][0] : spans[0][1]], b[spans[1][0] : spans[1][1]]


MASKING_STYLES = ("bert", "bert-cn-wwm")
_CJK = re.compile("^##[\u4E00-\u9FA5]")


def chinese_wwm_tables(tokenizer: Any, vocab_size: int) -> Tuple[np.ndarray, np.ndarray]:
    """For Chinese whole-word masking: which ids are word continuations (``##`` pieces, as a
    tokenizer with ``do_chinese_wwm=True`` marks the later characters of a word), and the id
    each token shows in the model input (``##字`` becomes ``字``: the ``##`` only carries the
    word boundary; the label keeps the original id)."""
    if not hasattr(tokenizer, "convert_ids_to_tokens"):
        raise ValueError("masking_style='bert-cn-wwm' needs a WordPiece tokenizer "
                         "(convert_ids_to_tokens / convert_tokens_to_ids)")
    pieces = tokenizer.convert_ids_to_tokens(list(range(vocab_size)))
    continuation = np.array([str(p).startswith("##") for p in pieces], dtype=bool)
    strip_to = np.arange(vocab_size, dtype=np.int64)
    for i, piece in enumerate(pieces):
        if _CJK.match(str(piece)):
            plain = tokenizer.convert_tokens_to_ids(piece[2:])
            if plain is not None and 0 <= int(plain) < vocab_size:
                strip_to[i] = int(plain)
    return continuation, strip_to


def mask_whole_words(
    tokens: np.ndarray, candidates: np.ndarray, rng: np.random.Generator, mask_prob: float,
    mask_id: int, vocab_size: int, continuation: np.ndarray, strip_to: np.ndarray,
    special_ids: Sequence[int] = (),
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BERT masking by whole words (LiBai's ``masking_style="bert-cn-wwm"``): a ``##`` piece
    is picked together with the pieces before it, so a word is hidden entirely or not at all;
    each picked position then follows the 80/10/10 rule. The input shows ``##字`` as ``字``;
    the labels keep the original ids. Returns ``(input, positions sorted, labels)``."""
    tokens = np.asarray(tokens, dtype=np.int64)
    words: List[List[int]] = []
    for pos in (int(p) for p in candidates):
        if words and words[-1][-1] == pos - 1 and continuation[tokens[pos]]:
            words[-1].append(pos)
        else:
            words.append([pos])
    budget = num_to_mask(len(candidates), mask_prob)
    picked: List[int] = []
    for w in rng.permutation(len(words)):
        if len(picked) + len(words[w]) <= budget:
            picked += words[w]
        if len(picked) >= budget:
            break
    positions = np.sort(np.asarray(picked, dtype=np.int64))
    labels = tokens[positions].copy()
    shown = strip_to[tokens]
    action = rng.random(len(positions))
    shown[positions[action < 0.8]] = mask_id
    to_random = positions[(action >= 0.8) & (action < 0.9)]
    if len(to_random):
        shown[to_random] = random_regular_tokens(rng, len(to_random), vocab_size, special_ids)
    return shown, positions, labels


class BertDataset(SentenceSampleDataset):
    """Masked-LM + sentence-pair samples with fields ``input_ids``, ``attention_mask`` (1 = real
    token), ``tokentype_ids``, ``ns_labels``, ``lm_labels``, ``loss_mask`` (see module doc).

    Args:
        name: label for logs and cache file names.
        tokenizer: provides ``cls_id``, ``sep_id``, ``mask_id``, ``pad_id``, ``vocab_size``.
        data_prefix / indexed_dataset: a corpus made with ``--split-sentences``.
        max_seq_length: padded sample length, special tokens included.
        num_samples: samples wanted (``None``: one epoch); more epochs regroup sentences anew.
        mask_lm_prob: fraction of text tokens picked for prediction.
        short_seq_prob: probability of a shorter random target length.
        binary_head: build sentence pairs with ``ns_labels``; ``sop`` picks the order task.
        max_num_samples: LiBai's name for ``num_samples`` (either works).
        masking_style: ``"bert"`` (token by token) or ``"bert-cn-wwm"`` (Chinese whole-word
            masking over a corpus tokenized with ``do_chinese_wwm=True``), as in LiBai.
        seed, split, splits_string, cache_dir: as for :class:`~libai.data.datasets.gpt_dataset.GPT2Dataset`.
    """

    kind = "bert"

    def __init__(
        self,
        name: str = "bert",
        tokenizer: Any = None,
        indexed_dataset: Optional[MMapIndexedDataset] = None,
        data_prefix: Optional[str] = None,
        max_num_samples: Optional[int] = None,
        mask_lm_prob: float = 0.15,
        max_seq_length: int = 512,
        short_seq_prob: float = 0.1,
        seed: int = 1234,
        binary_head: bool = True,
        masking_style: str = "bert",
        num_samples: Optional[int] = None,
        sop: bool = False,
        split: Union[str, int] = "train",
        splits_string: Union[str, Sequence[float]] = "949,50,1",
        cache_dir: Optional[str] = None,
    ) -> None:
        num_samples = resolve_num_samples(num_samples, max_num_samples, "BertDataset")
        if masking_style not in MASKING_STYLES:
            raise ValueError(f"BertDataset(masking_style={masking_style!r}): known styles are "
                             f"{', '.join(MASKING_STYLES)}")
        self.masking_style = masking_style
        ids = require_token_ids(tokenizer, ("cls_id", "sep_id", "mask_id", "pad_id", "vocab_size"), "BertDataset")
        self.cls_id, self.sep_id, self.mask_id = ids["cls_id"], ids["sep_id"], ids["mask_id"]
        self.pad_id, self.vocab_size = ids["pad_id"], ids["vocab_size"]
        self.max_seq_length = int(max_seq_length)
        self.mask_lm_prob, self.binary_head, self.sop = float(mask_lm_prob), bool(binary_head), bool(sop)
        num_special = 3 if binary_head else 2
        if self.max_seq_length <= num_special + 1:
            raise ValueError(f"max_seq_length {max_seq_length} leaves no room for text beside the special tokens")
        self._continuation = self._strip_to = None
        if masking_style == "bert-cn-wwm":
            self._continuation, self._strip_to = chinese_wwm_tables(tokenizer, self.vocab_size)
        self._setup(
            name, data_prefix, indexed_dataset, split, splits_string, cache_dir,
            self.max_seq_length - num_special, num_samples, seed, short_seq_prob,
            min_sentences=2 if binary_head else 1,
        )
        if binary_head and not sop:
            sentence_counts = np.diff(self.indexed.doc_idx)[self.text.documents]
            self._donor_documents = self.text.documents[sentence_counts > 0]
            if len(self._donor_documents) < 2 and len(self):
                # no other document to draw B from (a tiny held-out part): LiBai's pair task,
                # which swaps the order of A and B, is used for this split instead
                logger.warning(
                    "%s (%s): next-sentence prediction draws B from another document, but the split "
                    "has fewer than 2 non-empty documents; its pairs use sentence-order swapping "
                    "(LiBai's pair task) instead", name, self.text.split_name,
                )
                self.sop = True

    # ---------------------------------------------------------------- sentence pairs
    def _document_of(self, sentence: int) -> int:
        return int(np.searchsorted(self.indexed.doc_idx, sentence, side="right") - 1)

    def _random_continuation(self, current_doc: int, length: int, rng: np.random.Generator) -> np.ndarray:
        """Sentences from a random other document, from a random sentence on, ~``length`` tokens."""
        donors = self._donor_documents
        pick = int(rng.integers(0, len(donors) - 1))
        own = int(np.searchsorted(donors, current_doc))
        if own < len(donors) and donors[own] == current_doc and pick >= own:
            pick += 1  # skip the current document
        doc = int(donors[pick])
        first, end = int(self.indexed.doc_idx[doc]), int(self.indexed.doc_idx[doc + 1])
        start = int(rng.integers(first, end))
        taken: List[np.ndarray] = []
        total = 0
        for sentence in range(start, end):
            taken.append(np.asarray(self.indexed[sentence], dtype=np.int64))
            total += len(taken[-1])
            if total >= length:
                break
        return np.concatenate(taken)

    def _segments(self, idx: int, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray, int, int]:
        first, end, target = self.row(idx)
        sentences = self.sentences(first, end)
        if not self.binary_head:
            return np.concatenate(sentences), np.zeros(0, dtype=np.int64), 0, target
        split_at = int(rng.integers(1, len(sentences)))
        a = np.concatenate(sentences[:split_at])
        b = np.concatenate(sentences[split_at:])
        label = int(rng.random() < 0.5)
        if label and self.sop:
            a, b = b, a
        elif label:
            b = self._random_continuation(self._document_of(first), max(1, target - len(a)), rng)
        return a, b, label, target

    # ---------------------------------------------------------------- sample
    def __getitem__(self, idx: int) -> Instance:
        rng = self.sample_rng(idx)
        a, b, ns_label, target = self._segments(idx, rng)
        a, b = truncate_pair(a, b, target, rng)
        pieces = [[self.cls_id], a, [self.sep_id]]
        types = [0] * (len(a) + 2)
        if self.binary_head:
            pieces += [b, [self.sep_id]]
            types += [1] * (len(b) + 1)
        tokens = np.concatenate([np.asarray(p, dtype=np.int64) for p in pieces])
        special_positions = {0, len(a) + 1, len(tokens) - 1}
        candidates = np.asarray([i for i in range(len(tokens)) if i not in special_positions], dtype=np.int64)
        special_ids = (self.cls_id, self.sep_id, self.mask_id, self.pad_id)
        if self._continuation is None:
            masked, positions, labels = mask_tokens(
                tokens, candidates, rng, self.mask_lm_prob, self.mask_id, self.vocab_size,
                special_ids=special_ids,
            )
        else:
            masked, positions, labels = mask_whole_words(
                tokens, candidates, rng, self.mask_lm_prob, self.mask_id, self.vocab_size,
                self._continuation, self._strip_to, special_ids=special_ids,
            )
        return self._pad(masked, np.asarray(types, dtype=np.int64), positions, labels, ns_label)

    def _pad(self, tokens: np.ndarray, types: np.ndarray, positions: np.ndarray, labels: np.ndarray,
             ns_label: int) -> Instance:
        length, size = len(tokens), self.max_seq_length
        input_ids = np.full(size, self.pad_id, dtype=np.int64)
        input_ids[:length] = tokens
        tokentype_ids = np.zeros(size, dtype=np.int64)
        tokentype_ids[:length] = types
        attention_mask = np.zeros(size, dtype=np.int64)
        attention_mask[:length] = 1
        lm_labels = np.zeros(size, dtype=np.int64)
        lm_labels[positions] = labels
        loss_mask = np.zeros(size, dtype=np.int64)
        loss_mask[positions] = 1

        def tensor(value: np.ndarray) -> flow.Tensor:
            return flow.tensor(value, dtype=flow.long)

        return Instance(
            input_ids=DistTensorData(tensor(input_ids)),
            attention_mask=DistTensorData(tensor(attention_mask)),
            tokentype_ids=DistTensorData(tensor(tokentype_ids)),
            ns_labels=DistTensorData(flow.tensor(ns_label, dtype=flow.long), placement_idx=-1),
            lm_labels=DistTensorData(tensor(lm_labels), placement_idx=-1),
            loss_mask=DistTensorData(tensor(loss_mask), placement_idx=-1),
        )
