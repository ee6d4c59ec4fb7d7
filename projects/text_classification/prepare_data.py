#!/usr/bin/env python
"""Make a sentiment classification task from the lexicon that ships inside TextBlob.

TextBlob (``pip install textblob==0.20.1``) carries ``en/en-sentiment.xml``, the hand-tagged
subjectivity lexicon of English adjectives by De Smedt and Daelemans (PDDL licence): every entry
is a word sense with a WordNet gloss and a polarity in [-1, 1], e.g.

    abhorrent   "offensive to the mind"          polarity -0.7

Each entry with a non-zero polarity becomes one example ``{"text": "abhorrent: offensive to the
mind", "label": 0}`` (label 1 = positive, 0 = negative; neutral senses are left out). Nothing is
downloaded. Written into ``--output-dir``:

    train.jsonl, dev.jsonl     the labelled examples (80% / 20%, split by word, so no word is in both)
    corpus.jsonl               unlabelled text for pretraining: every gloss whose word is not in dev
                               (neutral ones included), grouped into documents of a few sentences

    python projects/text_classification/prepare_data.py --output-dir data/text_classification
"""
import argparse
import json
import os
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Dict, List, Tuple

import numpy as np


def lexicon_path() -> str:
    import textblob

    return os.path.join(os.path.dirname(textblob.__file__), "en", "en-sentiment.xml")


def read_lexicon(path: str) -> List[Tuple[str, str, float]]:
    """``(word, gloss, polarity)`` for every entry that has a gloss, in file order."""
    entries = []
    for node in ET.parse(path).getroot().iter("word"):
        sense = (node.get("sense") or "").strip()
        if sense:
            entries.append((node.get("form"), sense, float(node.get("polarity"))))
    return entries


def _write_jsonl(path: str, records: List[Dict]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def make_task(output_dir: str, dev_fraction: float = 0.2, seed: int = 0,
              sentences_per_doc: int = 4) -> Dict[str, int]:
    """Write train/dev/corpus files; return how many records each holds."""
    entries = read_lexicon(lexicon_path())
    words = sorted({word for word, _, _ in entries})
    rng = np.random.default_rng(seed)
    dev_words = set(rng.choice(words, size=int(len(words) * dev_fraction), replace=False).tolist())
    splits: Dict[str, List[Dict]] = defaultdict(list)
    seen = set()
    corpus_sentences = []
    for word, sense, polarity in entries:
        text = f"{word}: {sense}"
        if word not in dev_words:
            corpus_sentences.append(text + ".")
        if polarity == 0 or text in seen:
            continue
        seen.add(text)
        splits["dev" if word in dev_words else "train"].append({"text": text, "label": int(polarity > 0)})
    os.makedirs(output_dir, exist_ok=True)
    for split in ("train", "dev"):
        order = rng.permutation(len(splits[split]))
        _write_jsonl(os.path.join(output_dir, f"{split}.jsonl"), [splits[split][i] for i in order])
    docs = [{"text": " ".join(corpus_sentences[i:i + sentences_per_doc])}
            for i in range(0, len(corpus_sentences), sentences_per_doc)]
    _write_jsonl(os.path.join(output_dir, "corpus.jsonl"), docs)
    return {"train": len(splits["train"]), "dev": len(splits["dev"]), "corpus_docs": len(docs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default="data/text_classification")
    args = parser.parse_args()
    counts = make_task(args.output_dir)
    print(f"wrote {counts['train']} training and {counts['dev']} dev examples, and "
          f"{counts['corpus_docs']} pretraining documents under {args.output_dir}")


if __name__ == "__main__":
    main()
