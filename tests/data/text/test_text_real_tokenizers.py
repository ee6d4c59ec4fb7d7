"""End to end with libai's own tokenizers: train a vocabulary, preprocess, load the shipped
configs and draw batches through the NLP loaders."""
import os
import subprocess
import sys

import numpy as np
import pytest
from textdata_helpers import make_documents, write_jsonl

from libai.config import LazyConfig, instantiate
from libai.data.data_utils.indexed_dataset import MMapIndexedDataset
from libai.data.data_utils.preprocess import preprocess_jsonl
from libai.data.structures import Instance
from libai.tokenizer import BertTokenizer, GPT2Tokenizer, train_vocab

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("real_tok")
    docs = make_documents(80, seed=12)
    jsonl = write_jsonl(str(root / "corpus.jsonl"), docs, key="content")
    wordpiece = train_vocab(jsonl, str(root / "wp"), kind="wordpiece", vocab_size=150, json_key="content",
                            min_frequency=1)
    bpe = train_vocab(jsonl, str(root / "bpe"), kind="bpe", vocab_size=300, json_key="content", min_frequency=1)
    return {"root": root, "docs": docs, "jsonl": jsonl, "vocab_txt": wordpiece[0],
            "vocab_json": bpe[0], "merges": bpe[1]}


def test_cli_with_gpt2_tokenizer_reads_back_exactly(workspace):
    root = workspace["root"]
    result = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "tools", "preprocess_data.py"), "--input", workspace["jsonl"],
         "--json-keys", "content", "--output-prefix", str(root / "gpt"), "--append-eod",
         "--tokenizer-name", "GPT2Tokenizer", "--vocab-file", workspace["vocab_json"],
         "--merges-file", workspace["merges"]],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    tok = GPT2Tokenizer(vocab_file=workspace["vocab_json"], merges_file=workspace["merges"])
    ds = MMapIndexedDataset(str(root / "gpt_content_document"))
    assert ds.num_documents == len(workspace["docs"])
    for d, sentences in enumerate(workspace["docs"]):
        expected = tok.encode(" ".join(sentences), add_special_tokens=False) + [tok.eod_id]
        assert list(ds.get_document(d)) == expected


def _load(name, overrides):
    cfg = LazyConfig.load(os.path.join(REPO_ROOT, "configs", "common", "data", f"{name}_dataset.py"))
    return LazyConfig.apply_overrides(cfg, overrides)


def _first_batch(loaders):
    loader = loaders[0] if isinstance(loaders, tuple) else loaders
    return next(iter(loader))


def test_gpt_config_builds_a_training_batch(workspace):
    root = workspace["root"]
    prefix = str(root / "gpt_content_document")
    if not MMapIndexedDataset.exists(prefix):
        tok = GPT2Tokenizer(vocab_file=workspace["vocab_json"], merges_file=workspace["merges"])
        preprocess_jsonl(workspace["jsonl"], str(root / "gpt"), tok, json_keys=["content"], append_eod=True,
                         log=lambda m: None)
    cfg = _load("gpt", [
        f"dataloader.train.dataset.0.data_prefix={prefix}", "dataloader.train.dataset.0.max_seq_length=16",
        "dataloader.train.num_workers=0",
    ])
    cfg.dataloader.train.train_batch_size = 2
    batch = _first_batch(instantiate(cfg.dataloader.train))
    assert isinstance(batch, Instance)
    assert tuple(batch.input_ids.tensor.shape) == (2, 16) and tuple(batch.labels.tensor.shape) == (2, 16)
    np.testing.assert_array_equal(batch.input_ids.tensor.numpy()[:, 1:], batch.labels.tensor.numpy()[:, :-1])


@pytest.mark.parametrize("name", ["bert", "t5"])
def test_sentence_configs_build_batches(workspace, name):
    root = workspace["root"]
    tok = BertTokenizer(vocab_file=workspace["vocab_txt"], do_lower_case=True)
    prefix = str(root / "bert_content_sentence")
    if not MMapIndexedDataset.exists(prefix):
        summary = preprocess_jsonl(workspace["jsonl"], str(root / "bert"), tok, json_keys=["content"],
                                   split_sentences=True, log=lambda m: None)
        assert summary.outputs["content"] == prefix
    cfg = _load(name, [
        f"tokenization.tokenizer.vocab_file={workspace['vocab_txt']}",
        f"dataloader.train.dataset.0.data_prefix={prefix}", "dataloader.train.dataset.0.max_seq_length=32",
        "dataloader.train.num_workers=0",
        f"dataloader.train.dataset.0.tokenizer.vocab_file={workspace['vocab_txt']}",
    ] + (["dataloader.train.dataset.0.max_seq_length_dec=16"] if name == "t5" else []))
    cfg.dataloader.train.train_batch_size = 4
    batch = _first_batch(instantiate(cfg.dataloader.train))
    if name == "bert":
        assert tuple(batch.input_ids.tensor.shape) == (4, 32) and tuple(batch.ns_labels.tensor.shape) == (4,)
        assert batch.loss_mask.tensor.numpy().sum() >= 4
        cls_id = tok.cls_id
        assert (batch.input_ids.tensor.numpy()[:, 0] == cls_id).all()
    else:
        assert tuple(batch.encoder_attn_mask.tensor.shape) == (4, 32, 32)
        assert tuple(batch.encoder_decoder_attn_mask.tensor.shape) == (4, 16, 32)
        config_tok = instantiate(cfg.tokenization.tokenizer)  # with [BOS], [EOS] and sentinels
        sentinel = config_tok.convert_tokens_to_ids("<extra_id_0>")
        assert sentinel >= tok.vocab_size  # appended after the trained vocabulary
        assert (batch.lm_labels.tensor.numpy()[:, 0] == sentinel).all()  # every target opens with <S0>
