"""What every project case is made of: the shrinking overrides, a scratch copy laid out like a
LiBai checkout, a project's own pip requirements, and the small writers of tiny data (lines of
text, CJK sentences, a BERT vocabulary, a moved corpus, a SentencePiece model, alpaca files)."""
import json
import os
import subprocess
import sys
from typing import Dict, List, Sequence

import numpy as np

from .common import OUR_PYTHON, copy_tree

# every project: 4 iterations, a log line each, one process (no parallelism)
COMMON = [
    "train.train_iter=4", "train.train_epoch=0", "train.log_period=1",
    "train.dist.data_parallel_size=1", "train.dist.tensor_parallel_size=1",
    "train.dist.pipeline_parallel_size=1",
]
# what upstream LiBai needs on this machine (see run_libai.py's README)
UPSTREAM = ["train.dist.device_type=cpu", "train.input_placement_device=cpu",
            "train.evaluation.enabled=False"]

# LiBai's BERT config turns on CUDA-only fusions, which upstream uses whatever the device
# (libai picks the composite ops on the CPU by itself)
UPSTREAM_BERT = UPSTREAM + ["model.cfg.bias_gelu_fusion=False", "model.cfg.bias_dropout_fusion=False",
                            "model.cfg.scale_mask_softmax_fusion=False"]

CJK = [chr(0x4E00 + i) for i in range(48)]  # 一丁七万丈三上下不与 ...

# ---------------------------------------------------------------- helpers

def _checkout(libai_src: str, scratch: str) -> None:
    """``scratch`` laid out like a LiBai checkout: its ``projects/`` and ``configs/``, unchanged."""
    copy_tree(os.path.join(libai_src, "projects"), os.path.join(scratch, "projects"))
    copy_tree(os.path.join(libai_src, "configs"), os.path.join(scratch, "configs"))


def _requirements(scratch: str, modules: Dict[str, str], folder: str = "common") -> Dict[str, str]:
    """Make a project's own third-party requirements importable for our interpreter.

    ``modules`` maps an import name to a pip requirement (``"jieba"``, ``"numpy==1.23.5"``).
    A requirement with a version pin is always installed (a project that needs an older
    release than the environment's); others only when the import fails. They go with pip into
    ``project-deps/<folder>`` beside the scratch copies (never into the environment), which
    ``project_entry.py`` puts first on ``sys.path`` before anything is imported, for both
    engines (upstream LiBai's environment has the unpinned ones, not numpy 1.23).
    """
    python = OUR_PYTHON if os.path.exists(OUR_PYTHON) else sys.executable
    deps = os.path.join(os.path.dirname(os.path.dirname(scratch)), "project-deps", folder)
    marker = os.path.join(deps, ".installed")
    done = set()
    if os.path.isfile(marker):
        with open(marker, encoding="utf-8") as handle:
            done = set(handle.read().split())
    missing = []
    for module, requirement in modules.items():
        if requirement in done:
            continue
        pinned = "==" in requirement
        if pinned or subprocess.run([python, "-c", f"import {module}"], capture_output=True,
                                    env={**os.environ, "PYTHONPATH": deps}).returncode != 0:
            missing.append(requirement)
    if missing:
        subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--target", deps,
                        *missing], check=True)
        os.makedirs(deps, exist_ok=True)
        with open(marker, "a", encoding="utf-8") as handle:
            handle.write("\n".join(missing) + "\n")
    return {"LIBAI_PROJECT_DEPS": deps}


def _lines(path: str, lines: Sequence[str]) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def _cjk_sentence(rng: np.random.Generator, low: int = 4, high: int = 10) -> str:
    return "".join(rng.choice(CJK, size=int(rng.integers(low, high + 1))))


def _bert_vocab(path: str) -> str:
    """A BERT ``vocab.txt`` (one token per line) with LiBai's special tokens and the CJK
    characters of the tiny sentences, whole and as ``##`` continuations."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += CJK + ["##" + c for c in CJK] + list("abcdefghijklmnopqrstuvwxyz0123456789.,?!")
    return _lines(path, tokens)


def _bert_shrink(prefix: str = "model.cfg") -> List[str]:
    return [f"{prefix}.hidden_size=32", f"{prefix}.intermediate_size=64",
            f"{prefix}.hidden_layers=2", f"{prefix}.num_attention_heads=2",
            f"{prefix}.max_position_embeddings=64"]


def _move_corpus(corpus, folder: str, prefix: str, vocab: str, merges: str = "") -> None:
    os.makedirs(folder, exist_ok=True)
    for ext in (".bin", ".idx"):
        os.replace(corpus.prefix + ext, os.path.join(folder, prefix + ext))
    os.replace(corpus.vocab_file, os.path.join(folder, vocab))
    if merges and corpus.merges_file:
        os.replace(corpus.merges_file, os.path.join(folder, merges))

def _sentencepiece_model(folder: str, vocab: int = 128) -> str:
    """A tiny SentencePiece model (``<unk>`` 0, ``<s>`` 1, ``</s>`` 2, as Llama's)."""
    import sentencepiece as sp
    from .data import write_jsonl

    os.makedirs(folder, exist_ok=True)
    text = os.path.join(folder, "text.txt")
    with open(write_jsonl(os.path.join(folder, "text.jsonl"), docs=200), encoding="utf-8") as src:
        _lines(text, [json.loads(line)["text"] for line in src])
    prefix = os.path.join(folder, "tokenizer")
    sp.SentencePieceTrainer.train(input=text, model_prefix=prefix, vocab_size=vocab,
                                  model_type="bpe", unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                                  minloglevel=2)
    return prefix + ".model"


def _alpaca(folder: str, vocab: int, seq: int, count: int = 16) -> None:
    """``train`` and ``test`` files of ``[{"input_ids": LongTensor[seq], "labels": ...}]``
    with the prompt part of the labels masked by -1 (what the projects' prepare scripts write)."""
    import oneflow as flow

    rng = np.random.default_rng(3)
    os.makedirs(folder, exist_ok=True)
    for split, n in (("train", count), ("test", max(2, count // 4))):
        samples = []
        for _ in range(n):
            ids = rng.integers(3, vocab, size=seq)
            labels = ids.copy()
            labels[: seq // 2] = -1
            samples.append({"input_ids": flow.tensor(ids, dtype=flow.long),
                            "labels": flow.tensor(labels, dtype=flow.long)})
        flow.save(samples, os.path.join(folder, split))

