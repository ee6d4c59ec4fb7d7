"""Tiny data sets in the formats LiBai's configs and projects read, written from nothing.

Text corpora are Megatron-LM / LiBai ``MMIDIDX`` files (``.bin`` + ``.idx``) made by libai's
``preprocess_jsonl`` with the tokenizer the config itself names (vocabulary files in that
tokenizer's own format), images are a CIFAR-100 ``cifar-100-python`` pickle folder and an
ImageNet-style ``train/`` + ``val/`` class-per-folder tree. Every writer is deterministic
(``numpy`` seeded) and small enough to write in a second; nothing is downloaded.
"""
import json
import os
import pickle
from dataclasses import dataclass
from typing import Dict, List

import numpy as np

WORDS = (
    "river stone cloud garden window silver market engine forest candle harbor planet violin "
    "meadow lantern copper island winter summer pocket ribbon thunder marble canyon orchard falcon"
).split()
# a few CJK characters: LiBai's BERT configs tokenize with whole-word masking for Chinese
CJK = list("天地人山水火木金土日月风雨云花草")
SPECIAL_BERT = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[BOS]", "[EOS]"]
IMAGE_CLASSES = 4


@dataclass
class TextCorpus:
    """Files of one tokenized corpus: ``prefix`` is what a config's ``data_prefix`` names."""

    prefix: str
    vocab_file: str
    merges_file: str = ""


def _sentences(rng: np.random.Generator, count: int) -> List[str]:
    out = []
    for _ in range(count):
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), size=int(rng.integers(4, 10)))]
        if rng.random() < 0.3:
            words.insert(int(rng.integers(0, len(words))), "".join(rng.choice(CJK, size=2)))
        out.append(" ".join(words).capitalize() + ".")
    return out


def write_jsonl(path: str, docs: int = 1000, seed: int = 0) -> str:
    """``docs`` documents of 2 to 4 sentences, one JSON object (``{"text": ...}``) per line.

    1,000 documents is what LiBai's ``[949, 50, 1]`` split needs to leave a one-document test
    part, i.e. a held-out part shorter than one sample, which LiBai still trains with.
    """
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(docs):
            text = " ".join(_sentences(rng, int(rng.integers(2, 5))))
            handle.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    return path


def write_bert_vocab(path: str) -> str:
    """A WordPiece ``vocab.txt``: special tokens, punctuation, the words and the characters."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(SPECIAL_BERT + [".", ","] + WORDS + CJK + ["##" + c for c in CJK]) + "\n")
    return path


def _byte_level_units() -> List[str]:
    """GPT-2's printable stand-ins for the 256 byte values (its published mapping)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    units, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            units[byte] = chr(byte)
        else:
            units[byte] = chr(256 + extra)
            extra += 1
    return [units[b] for b in range(256)]


def write_bpe_vocab(folder: str, name: str, specials: List[str], first: bool) -> Dict[str, str]:
    """A byte-level BPE ``vocab.json`` (every byte, no merges) and an empty ``merges.txt``.

    ``specials`` go first (RoBERTa: ``<s>`` is id 0) or last (GPT-2: ``<|endoftext|>``).
    """
    os.makedirs(folder, exist_ok=True)
    tokens = (specials + _byte_level_units()) if first else (_byte_level_units() + specials)
    vocab = os.path.join(folder, f"{name}-vocab.json")
    merges = os.path.join(folder, f"{name}-merges.txt")
    with open(vocab, "w", encoding="utf-8") as handle:
        json.dump({token: i for i, token in enumerate(tokens)}, handle, ensure_ascii=False)
    with open(merges, "w", encoding="utf-8") as handle:
        handle.write("#version: 0.2\n")
    return {"vocab_file": vocab, "merges_file": merges}


def tokenize_corpus(jsonl: str, prefix: str, tokenizer, split_sentences: bool, append_eod: bool) -> str:
    """Write ``prefix_text_{sentence,document}.{bin,idx}`` (MMIDIDX); return its data prefix."""
    from libai.data.data_utils.preprocess import preprocess_jsonl

    summary = preprocess_jsonl(jsonl, prefix, tokenizer, split_sentences=split_sentences,
                               append_eod=append_eod, log=lambda msg: None)
    return summary.outputs["text"]


def bert_corpus(root: str, jsonl: str) -> TextCorpus:
    """BERT / T5 configs: a WordPiece vocabulary and a sentence-split corpus."""
    from libai.tokenizer import BertTokenizer

    vocab = write_bert_vocab(os.path.join(root, "bert-vocab.txt"))
    tokenizer = BertTokenizer(vocab_file=vocab, do_lower_case=True)
    return TextCorpus(tokenize_corpus(jsonl, os.path.join(root, "bert"), tokenizer, True, False), vocab)


def gpt2_corpus(root: str, jsonl: str) -> TextCorpus:
    """GPT-2 config: byte-level vocabulary with ``<|endoftext|>``, documents ending in EOD."""
    from libai.tokenizer import GPT2Tokenizer

    files = write_bpe_vocab(root, "gpt2", ["<|endoftext|>"], first=False)
    tokenizer = GPT2Tokenizer(**files)
    prefix = tokenize_corpus(jsonl, os.path.join(root, "gpt2"), tokenizer, False, True)
    return TextCorpus(prefix, files["vocab_file"], files["merges_file"])


def roberta_corpus(root: str, jsonl: str) -> TextCorpus:
    """RoBERTa config: byte-level vocabulary with ``<s> <pad> </s> <unk>`` first, ``<mask>``."""
    from libai.tokenizer import RobertaTokenizer

    files = write_bpe_vocab(root, "roberta", ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], first=True)
    tokenizer = RobertaTokenizer(**files)
    prefix = tokenize_corpus(jsonl, os.path.join(root, "roberta"), tokenizer, True, False)
    return TextCorpus(prefix, files["vocab_file"], files["merges_file"])


def write_cifar100(root: str, seed: int = 0, train: int = 16, test: int = 8) -> str:
    """``root/cifar-100-python/{train,test,meta}`` as the CIFAR-100 python release has them."""
    rng = np.random.default_rng(seed)
    folder = os.path.join(root, "cifar-100-python")
    os.makedirs(folder, exist_ok=True)
    for name, count in (("train", train), ("test", test)):
        with open(os.path.join(folder, name), "wb") as handle:
            pickle.dump({b"data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
                         b"fine_labels": [i % 100 for i in range(count)],
                         b"coarse_labels": [i % 20 for i in range(count)],
                         b"filenames": [f"img{i}.png".encode() for i in range(count)]}, handle)
    with open(os.path.join(folder, "meta"), "wb") as handle:
        pickle.dump({"fine_label_names": [f"class{i}" for i in range(100)],
                     "coarse_label_names": [f"group{i}" for i in range(20)]}, handle)
    return root


def write_imagenet(root: str, seed: int = 0, per_class: int = 4, size: int = 40) -> str:
    """``root/train/<class>/*.png`` and ``root/val/<class>/*.png``, ``IMAGE_CLASSES`` classes."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for split, count in (("train", per_class), ("val", max(1, per_class // 2))):
        for label in range(IMAGE_CLASSES):
            folder = os.path.join(root, split, f"n{label:08d}")
            os.makedirs(folder, exist_ok=True)
            for k in range(count):
                pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(os.path.join(folder, f"img{k}.png"))
    return root
