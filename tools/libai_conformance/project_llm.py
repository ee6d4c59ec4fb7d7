"""The LLM fine-tuning projects (Llama, Baichuan, Qwen, Aquila, ChatGLM): a tiny tokenizer in the
project's format, ``alpaca_data`` or ChatGLM's json columns, and a model shrunk to a few
thousand parameters."""
import json
import os
from typing import Callable, List, Sequence

import numpy as np

from .common import Prepared
from .project_helpers import (COMMON, UPSTREAM, _alpaca, _checkout, _lines,
                              _sentencepiece_model)

SFT_NOTE = "its own weights loader needs downloaded weights; the config ran through tools/train_net.py"


def _sft_overrides(vocab: int) -> List[str]:
    """The overrides both kinds of SFT project share, after their tokenizer's."""
    return [
        "dataloader.train.dataset.0.path=alpaca_data/train",
        "dataloader.test.0.dataset.path=alpaca_data/test",
        "model.cfg.hidden_size=32", "model.cfg.intermediate_size=64",
        "model.cfg.num_attention_heads=2", "model.cfg.hidden_layers=2",
        f"model.cfg.vocab_size={vocab}", "model.cfg.max_position_embeddings=64",
        "train.train_micro_batch_size=2", "train.test_micro_batch_size=1",
        "train.num_accumulation_steps=1", "train.dist.pipeline_num_layers=2",
        "train.evaluation.eval_period=4", "train.evaluation.eval_iter=2",
        "train.activation_checkpoint.enabled=False",
        "train.dist.device_type=cpu",  # Baichuan's config asks for CUDA
    ]


def _sft(project: str, config: str) -> Callable[[str, str], Prepared]:
    """Supervised fine-tuning of a SentencePiece-tokenized LLM project (Llama, Baichuan): a
    ``tokenizer.model`` trained on the tiny text, and ``alpaca_data/{train,test}`` written with
    ``flow.save`` as its ``utils/prepare_alpaca.py`` / ``data_prepare.py`` does (a list of
    ``{"input_ids", "labels"}`` tensors).

    Run through tools/train_net.py: the project's ``train_net.py`` (where it has one) always
    starts from a Hugging Face checkpoint (``...LoaderHuggerFace(...).load()``), i.e. weights
    to download; its config builds the model from scratch.
    """

    def prepare(libai_src: str, scratch: str) -> Prepared:
        _checkout(libai_src, scratch)
        spm = _sentencepiece_model(os.path.join(scratch, "tiny-tokenizer"))
        _alpaca(os.path.join(scratch, "alpaca_data"), vocab=128, seq=32)
        return Prepared(
            config=f"projects/{project}/configs/{config}",
            overrides=COMMON + [f"tokenization.tokenizer.pretrained_model_path={spm}"]
            + _sft_overrides(128),
            upstream_overrides=UPSTREAM, project=True, note=SFT_NOTE,
        )

    return prepare


def _sft_bpe(project: str, config: str, extra: Sequence[str] = ()) -> Callable[[str, str], Prepared]:
    """Supervised fine-tuning of a byte-level-BPE LLM project (Qwen, Aquila): ``vocab.json`` and
    ``merges.txt`` in a stand-in for the downloaded model folder, and the same ``alpaca_data``
    files as :func:`_sft`. Run through tools/train_net.py for the same reason."""

    def prepare(libai_src: str, scratch: str) -> Prepared:
        from .data import write_bpe_vocab

        _checkout(libai_src, scratch)
        files = write_bpe_vocab(os.path.join(scratch, "tiny-model"), "tiny", ["<|endoftext|>"],
                                first=False)
        _alpaca(os.path.join(scratch, "alpaca_data"), vocab=257, seq=32)
        return Prepared(
            config=f"projects/{project}/configs/{config}",
            overrides=COMMON + [f"tokenization.tokenizer.vocab_file={files['vocab_file']}",
                                f"tokenization.tokenizer.merges_file={files['merges_file']}"]
            + _sft_overrides(257) + list(extra),
            upstream_overrides=UPSTREAM, project=True, note=SFT_NOTE,
        )

    return prepare


def _chatglm(libai_src: str, scratch: str) -> Prepared:
    """ChatGLM supervised fine-tuning: the config reads ``CHATGLM_HF_DIR`` (the model folder,
    for ``tokenizer.model``) and ``DATA_DIR`` (``train.json`` / ``test.json``: columns
    ``prompt``, ``query``, ``response`` as lists) from the environment at load time."""
    _checkout(libai_src, scratch)
    model_dir = os.path.join(scratch, "tiny-chatglm")
    spm = _sentencepiece_model(model_dir)
    os.replace(spm, os.path.join(model_dir, "tokenizer.model"))
    data_dir = os.path.join(scratch, "chatglm-data")
    rng = np.random.default_rng(4)
    words = "river stone cloud garden window silver market engine forest candle".split()
    for split, count in (("train", 8), ("test", 2)):
        columns = {key: [" ".join(rng.choice(words, size=4)) for _ in range(count)]
                   for key in ("prompt", "query", "response")}
        _lines(os.path.join(data_dir, f"{split}.json"), [json.dumps(columns)])
    return Prepared(
        config="projects/ChatGLM/configs/chatglm_sft.py",
        overrides=COMMON + [
            "model.cfg.hidden_size=32", "model.cfg.ffn_hidden_size=64", "model.cfg.kv_channels=16",
            "model.cfg.num_attention_heads=2", "model.cfg.multi_query_group_num=1",
            "model.cfg.num_layers=2", "model.cfg.padded_vocab_size=160",
            "model.cfg.seq_length=64", "train.dist.pipeline_num_layers=2",
            "dataloader.train.dataset.0.max_source_len=16",
            "dataloader.train.dataset.0.max_target_len=16",
            "dataloader.train.dataset.0.max_length=33",
            "dataloader.test.0.dataset.max_source_len=16",
            "dataloader.test.0.dataset.max_target_len=16",
            "dataloader.test.0.dataset.max_length=33",
            "train.train_micro_batch_size=2", "train.test_micro_batch_size=1",
            "train.num_accumulation_steps=1", "train.evaluation.eval_period=4",
            "train.evaluation.eval_iter=2", "train.activation_checkpoint.enabled=False",
        ],
        upstream_overrides=UPSTREAM, project=True,
        env={"CHATGLM_HF_DIR": model_dir, "DATA_DIR": data_dir},
        note="projects/ChatGLM/train_net.py needs downloaded weights; the config ran through "
        "tools/train_net.py",
    )

