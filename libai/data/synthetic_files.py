"""Tiny synthetic data files, one writer per on-disk format libai's datasets read.

``--smoke`` puts them in place of a recipe's data that is not there yet
(:mod:`libai.engine.smoke_data`), so that a first run goes through the recipe's real loading
code (indexed corpora, image folders, CIFAR batches, OFRecord parts, MNIST IDX files, JSON lines)
before the user has prepared anything; tests train on them for the same reason. Everything is
deterministic (a seed, no clock), small (kilobytes) and made with libai's own tools where one
exists (``preprocess_jsonl`` for indexed corpora, ``convert_image_folder_to_ofrecord`` for
OFRecord, ``tokenizers`` for a Hugging Face tokenizer directory), so a stand-in is exactly the
format the real data has.
"""
import json
import os
import pickle
from typing import Any, List, Mapping, Tuple

import numpy as np

__all__ = [
    "WORDS",
    "write_text_corpus",
    "write_indexed_corpus",
    "write_classification_jsonl",
    "write_image_folder",
    "write_cifar_batches",
    "write_ofrecord_parts",
    "write_mnist_files",
    "write_bpe_tokenizer",
    "write_chat_tokenizer",
    "write_sft_jsonl",
    "CHAT_SPECIALS",
    "CHAT_TEMPLATE",
]

WORDS = (
    "river stone cloud garden window silver market engine forest candle harbor planet violin "
    "meadow lantern copper island winter summer pocket ribbon thunder marble canyon orchard falcon"
).split()


def _sentences(rng: np.random.Generator, count: int) -> List[str]:
    out = []
    for _ in range(count):
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), size=int(rng.integers(4, 10)))]
        out.append(" ".join(words).capitalize() + ".")
    return out


def write_text_corpus(path: str, documents: int = 40, seed: int = 0) -> str:
    """``documents`` JSON lines ``{"text": ...}`` of 2-5 sentences each; returns ``path``."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(documents):
            handle.write(json.dumps({"text": " ".join(_sentences(rng, int(rng.integers(2, 6))))}) + "\n")
    return path


def write_indexed_corpus(corpus: str, output_prefix: str, tokenizer: Any, append_eod: bool = False) -> str:
    """``corpus`` (JSON lines with ``"text"``) tokenized by ``tokenizer`` into a Megatron
    ``mmap`` indexed dataset, one sentence per item (``tools/preprocess_data.py
    --split-sentences``, which every text dataset reads); returns the ``data_prefix``."""
    from libai.data.data_utils.preprocess import preprocess_jsonl

    summary = preprocess_jsonl(corpus, output_prefix, tokenizer, split_sentences=True,
                               append_eod=append_eod, log=lambda message: None)
    return summary.outputs["text"]


def write_classification_jsonl(path: str, count: int, num_labels: int = 2, seed: int = 0) -> str:
    """``count`` JSON lines ``{"text", "label"}`` (labels ``0..num_labels-1``); returns ``path``."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for i, text in enumerate(_sentences(rng, count)):
            handle.write(json.dumps({"text": text, "label": i % num_labels}) + "\n")
    return path


def write_image_folder(root: str, classes: int = 4, per_class: int = 4, size: int = 32, seed: int = 0) -> str:
    """A class-per-folder tree ``root/class_<k>/img<i>.png`` of random RGB images; returns ``root``."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for label in range(classes):
        folder = os.path.join(root, f"class_{label}")
        os.makedirs(folder, exist_ok=True)
        for k in range(per_class):
            pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(os.path.join(folder, f"img{k}.png"))
    return root


def write_cifar_batches(root: str, folder: str, label_key: str, counts: Mapping[str, int],
                        num_classes: int = 4, seed: int = 0) -> str:
    """CIFAR pickle batches ``root/folder/<name>`` of ``counts[name]`` random 32×32 RGB images
    each (``data``: ``(count, 3072)`` uint8, and ``label_key``), the i-th image of a batch
    labelled ``i % num_classes``; returns ``root``. CIFAR-10 is ``folder="cifar-10-batches-py"``,
    ``label_key="labels"``; CIFAR-100 ``"cifar-100-python"``, ``"fine_labels"`` (the dataset
    classes carry both, and their file names)."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(root, folder), exist_ok=True)
    for name, count in counts.items():
        with open(os.path.join(root, folder, name), "wb") as handle:
            pickle.dump({b"data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
                         label_key.encode(): [i % num_classes for i in range(count)]}, handle)
    return root


def write_ofrecord_parts(root: str, images: str) -> str:
    """The class-per-folder tree ``images`` as OFRecord parts plus ``classes.txt`` in ``root``
    (``tools/images_to_ofrecord.py``); returns ``root``."""
    from libai.data.datasets.ofrecord import convert_image_folder_to_ofrecord

    convert_image_folder_to_ofrecord(images, root)
    return root


def write_mnist_files(root: str, counts: Tuple[int, int] = (32, 16), seed: int = 0) -> str:
    """MNIST's four IDX files (28×28 uint8 images, labels 0..9) in ``root``; returns ``root``."""
    from libai.data.datasets.mnist_files import write_idx_dataset

    rng = np.random.default_rng(seed)
    for split, count in zip(("train", "test"), counts):
        images = rng.integers(0, 256, (count, 28, 28), dtype=np.uint8)
        write_idx_dataset(root, split, images, (np.arange(count) % 10).astype(np.uint8))
    return root


#: the special tokens and chat template of :func:`write_chat_tokenizer` (a ChatML-like template
#: that raises on a role it does not know, as many real templates do)
CHAT_SPECIALS = ["<pad>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('Unknown role: ' + m['role']) }}{% endif %}"
    "<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def write_bpe_tokenizer(texts: List[str], directory: str, vocab_size: int,
                        specials: List[str], config: Mapping[str, Any]) -> str:
    """A byte-level BPE learnt on ``texts`` by ``tokenizers``, written as a Hugging Face
    tokenizer directory (``tokenizer.json``, and ``config`` as ``tokenizer_config.json``, where
    the chat template lives), the format :class:`libai.tokenizer.AutoTokenizer` reads; returns
    ``directory``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    os.makedirs(directory, exist_ok=True)
    tok.save(os.path.join(directory, "tokenizer.json"))
    with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as handle:
        json.dump(dict(config), handle, indent=1)
    return directory


def write_chat_tokenizer(directory: str, vocab_size: int = 320, seed: int = 0) -> str:
    """A Hugging Face tokenizer directory with a chat template (:data:`CHAT_TEMPLATE`, bos
    ``<s>``, eos ``</s>``, pad ``<pad>``), learnt on synthetic sentences; returns ``directory``."""
    texts = _sentences(np.random.default_rng(seed), 200)
    config = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "chat_template": CHAT_TEMPLATE,
              "tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": False}
    return write_bpe_tokenizer(texts, directory, vocab_size, CHAT_SPECIALS, config)


def write_sft_jsonl(path: str, count: int, kind: str = "chat", seed: int = 0) -> str:
    """``count`` fine-tuning samples as JSON lines: ``kind="chat"`` writes ``{"messages":
    [user, assistant]}``, ``"instruction"`` writes ``{"instruction", "input", "output"}``;
    returns ``path``."""
    if kind not in ("chat", "instruction"):
        raise ValueError(f"write_sft_jsonl: kind must be 'chat' or 'instruction', not {kind!r}")
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for question, answer in zip(_sentences(rng, count), _sentences(rng, count)):
            if kind == "chat":
                sample = {"messages": [{"role": "user", "content": question},
                                       {"role": "assistant", "content": answer}]}
            else:
                sample = {"instruction": "Answer in one sentence.", "input": question, "output": answer}
            handle.write(json.dumps(sample) + "\n")
    return path
