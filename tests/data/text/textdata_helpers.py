"""Test helpers for text data: a tiny word-level tokenizer and a generated corpus.

The tokenizer follows the protocol the datasets rely on (``encode(text,
add_special_tokens=False)``, ``eod_id``, ``vocab_size``, ``cls_id``, ``sep_id``, ``mask_id``,
``pad_id``), and is importable by name so worker processes and the CLI
(``--tokenizer-name textdata_helpers:TinyTokenizer``) can build it.
"""
import json
import re
from typing import List, Optional

import numpy as np

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[EOD]"]
NUM_SENTINELS = 40
WORDS = (
    "river stone cloud garden window silver market engine forest candle harbor planet "
    "violin meadow lantern copper island winter summer pocket ribbon thunder marble canyon "
    "orchard falcon velvet compass glacier saddle timber beacon quarry anchor blossom cavern "
    "ember fossil granite hollow jasper kettle lagoon mosaic nectar oyster pepper quiver "
    "rafter spindle tundra umber walnut yonder zephyr amber bramble cedar dune fable"
).split()


class TinyTokenizer:
    """Lower-cased words and punctuation looked up in a fixed vocabulary."""

    def __init__(self, vocab_file: Optional[str] = None) -> None:
        if vocab_file is not None:
            with open(vocab_file, encoding="utf-8") as f:
                tokens = [line.rstrip("\n") for line in f if line.strip()]
        else:
            tokens = default_vocab()
        self.vocab = {t: i for i, t in enumerate(tokens)}
        self.pad_id, self.unk_id = self.vocab["[PAD]"], self.vocab["[UNK]"]
        self.cls_id, self.sep_id = self.vocab["[CLS]"], self.vocab["[SEP]"]
        self.mask_id, self.eod_id = self.vocab["[MASK]"], self.vocab["[EOD]"]
        self.additional_special_tokens_ids = [
            self.vocab[t] for t in tokens if t.startswith("<extra_id_")
        ]

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, text: str, add_special_tokens: bool = False) -> List[int]:
        ids = [self.vocab.get(w, self.unk_id) for w in re.findall(r"\w+|[^\w\s]", text.lower())]
        if add_special_tokens:
            ids = [self.cls_id] + ids + [self.sep_id]
        return ids


def default_vocab() -> List[str]:
    sentinels = [f"<extra_id_{i}>" for i in range(NUM_SENTINELS)]
    return SPECIALS + WORDS + [".", ",", "!", "?"] + sentinels


def write_vocab(path: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(default_vocab()) + "\n")
    return path


def make_documents(num_docs: int, seed: int = 0, max_sentences: int = 6) -> List[List[str]]:
    """Documents as lists of sentences like ``"Falcon river stone."``: capitalised, ending in a
    period, so the rule-based splitter must recover exactly these sentences."""
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(num_docs):
        sentences = []
        for _ in range(int(rng.integers(1, max_sentences + 1))):
            words = [WORDS[i] for i in rng.integers(0, len(WORDS), size=int(rng.integers(3, 12)))]
            words[0] = words[0].capitalize()
            sentences.append(" ".join(words) + ".")
        docs.append(sentences)
    return docs


def write_jsonl(path: str, docs: List[List[str]], key: str = "text") -> str:
    with open(path, "w", encoding="utf-8") as f:
        for sentences in docs:
            f.write(json.dumps({key: " ".join(sentences)}) + "\n")
    return path
