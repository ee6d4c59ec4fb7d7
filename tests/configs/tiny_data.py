"""Tiny on-disk data for the recipe tests: one instance of every format a recipe reads.

Everything is made with libai's own tools (``preprocess_jsonl`` for the indexed corpora,
``convert_image_folder_to_ofrecord`` for OFRecord) from deterministic text and pixels, so the
recipes' real loading paths run; nothing is downloaded. ``build_tiny_data(root)`` returns the
placeholder values that tests/configs/recipe_overrides.py refers to as ``{name}``.
"""
import json
import os
import pickle
from typing import Dict, List, Tuple

import numpy as np
from PIL import Image

from libai.data.data_utils.preprocess import preprocess_jsonl
from libai.tokenizer import BertTokenizer, GPT2Tokenizer
from libai.tokenizer.byte_level import bytes_to_unicode

WORDS = (
    "river stone cloud garden window silver market engine forest candle harbor planet violin "
    "meadow lantern copper island winter summer pocket ribbon thunder marble canyon orchard falcon"
).split()
IMAGE_CLASSES = 4


def _sentences(rng: np.random.Generator, count: int) -> List[str]:
    out = []
    for _ in range(count):
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), size=int(rng.integers(4, 10)))]
        out.append(" ".join(words).capitalize() + ".")
    return out


def _write_corpus(path: str, rng: np.random.Generator, docs: int = 40) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(docs):
            handle.write(json.dumps({"text": " ".join(_sentences(rng, int(rng.integers(2, 6))))}) + "\n")
    return path


def _bert_files(root: str, corpus: str) -> Dict[str, str]:
    vocab = os.path.join(root, "bert-vocab.txt")
    with open(vocab, "w", encoding="utf-8") as handle:
        handle.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + WORDS) + "\n")
    tokenizer = BertTokenizer(vocab_file=vocab, do_lower_case=True)
    summary = preprocess_jsonl(corpus, os.path.join(root, "bert"), tokenizer, split_sentences=True,
                               log=lambda msg: None)
    return {"bert_vocab": vocab, "bert_prefix": summary.outputs["text"]}


def _gpt_files(root: str, corpus: str) -> Dict[str, str]:
    """A byte-level vocabulary (every byte, no merges) plus the end-of-text token."""
    vocab, merges = os.path.join(root, "gpt2-vocab.json"), os.path.join(root, "gpt2-merges.txt")
    tokens = list(bytes_to_unicode().values()) + ["<|endoftext|>"]
    with open(vocab, "w", encoding="utf-8") as handle:
        json.dump({token: i for i, token in enumerate(tokens)}, handle)
    with open(merges, "w", encoding="utf-8") as handle:
        handle.write("#version: 0.2\n")
    tokenizer = GPT2Tokenizer(vocab_file=vocab, merges_file=merges)
    summary = preprocess_jsonl(corpus, os.path.join(root, "gpt"), tokenizer, append_eod=True,
                               log=lambda msg: None)
    return {"gpt_vocab": vocab, "gpt_merges": merges, "gpt_prefix": summary.outputs["text"]}


def _image_tree(root: str, rng: np.random.Generator, per_class: int) -> str:
    for label in range(IMAGE_CLASSES):
        folder = os.path.join(root, f"class_{label}")
        os.makedirs(folder, exist_ok=True)
        for k in range(per_class):
            pixels = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(os.path.join(folder, f"img{k}.png"))
    return root


def write_cifar100(root: str, rng: np.random.Generator, counts: Tuple[int, int] = (16, 8),
                   num_classes: int = IMAGE_CLASSES) -> str:
    """``root/cifar-100-python/{train,test}``: ``counts`` random 32×32 RGB images per split
    (drawn from ``rng``), the i-th labelled ``i % num_classes``; returns ``root``. Also the
    fake CIFAR-100 of the data-config and vision-model tests."""
    folder = os.path.join(root, "cifar-100-python")
    os.makedirs(folder, exist_ok=True)
    for name, count in zip(("train", "test"), counts):
        with open(os.path.join(folder, name), "wb") as handle:
            pickle.dump({b"data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
                         b"fine_labels": [i % num_classes for i in range(count)]}, handle)
    return root


def _text_classification(root: str, rng: np.random.Generator) -> Dict[str, str]:
    paths = {}
    for split, count in (("train", 32), ("val", 16)):
        path = os.path.join(root, f"cls_{split}.jsonl")
        with open(path, "w", encoding="utf-8") as handle:
            for text in _sentences(rng, count):
                handle.write(json.dumps({"text": text, "label": int("river" in text)}) + "\n")
        paths[f"text_cls_{split}"] = path
    return paths


def _sft_files(root: str) -> Dict[str, str]:
    """A Hugging Face tokenizer directory with a chat template, and chat JSON lines."""
    from tests.data.sft_helpers import train_tokenizer

    paths = {"sft_tokenizer": train_tokenizer(os.path.join(root, "sft_tokenizer"))}
    for split, count in (("train", 24), ("valid", 8)):
        path = paths[f"sft_{split}"] = os.path.join(root, f"sft_{split}.jsonl")
        with open(path, "w", encoding="utf-8") as handle:
            for i in range(count):
                word = WORDS[i % len(WORDS)]
                chat = [{"role": "user", "content": f"Name {word}?"},
                        {"role": "assistant", "content": f"{word.capitalize()}."}]
                handle.write(json.dumps({"messages": chat}) + "\n")
    return paths


def build_tiny_data(root: str) -> Dict[str, str]:
    """Write every tiny data set under ``root``; return the placeholder name -> path mapping."""
    from libai.data.datasets.ofrecord import convert_image_folder_to_ofrecord

    rng = np.random.default_rng(0)
    corpus = _write_corpus(os.path.join(root, "corpus.jsonl"), rng)
    values = {**_bert_files(root, corpus), **_gpt_files(root, corpus)}
    values["image_train"] = _image_tree(os.path.join(root, "images", "train"), rng, per_class=4)
    values["image_val"] = _image_tree(os.path.join(root, "images", "val"), rng, per_class=2)
    values["cifar_root"] = write_cifar100(os.path.join(root, "cifar"), rng)
    for split in ("train", "val"):
        out = os.path.join(root, "ofrecord", split)
        convert_image_folder_to_ofrecord(values[f"image_{split}"], out)
        values[f"ofrecord_{split}"] = out
    values.update(_text_classification(root, rng))
    values.update(_sft_files(root))
    return values
