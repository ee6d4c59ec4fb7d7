"""The projects' README commands, at their smallest size, in this one process.

Each step calls the function behind the README's command (the data scripts, ``train_vocab``,
``preprocess_jsonl``) and trains with ``DefaultTrainer`` on the project's own config files, with
the overrides that the README lists for a quick run.
"""
import json
import math
import os

import numpy as np
import oneflow as flow
import pytest

from libai.config import LazyConfig
from libai.data.data_utils.preprocess import preprocess_jsonl
from libai.engine import DefaultTrainer
from libai.tokenizer import BertTokenizer
from libai.tokenizer.trainers import train_vocab
from projects.image_classification.prepare_data import write_digit_folders
from projects.text_classification.prepare_data import make_task

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _train(config, overrides):
    cfg = LazyConfig.load(os.path.join(REPO, config))
    LazyConfig.apply_overrides(cfg, overrides)
    trainer = DefaultTrainer(cfg)
    trainer.resume_or_load(resume=False)  # what tools/train_net.py does: loads train.load_weight
    trainer.train()
    with open(os.path.join(cfg.train.output_dir, "metrics.json"), encoding="utf-8") as handle:
        return trainer, [json.loads(line) for line in handle if line.strip()]


def test_image_classification_project_prepares_an_image_folder_and_trains(tmp_path):
    counts = write_digit_folders(str(tmp_path / "digits"), limit=5)
    assert counts == {"train": 40, "val": 10}  # 4 + 1 images of each of the 10 digits
    assert sorted(os.listdir(tmp_path / "digits" / "train")) == [str(d) for d in range(10)]
    trainer, lines = _train("projects/image_classification/configs/vit_digits.py", [
        f"dataloader.train.dataset.0.root='{tmp_path}/digits/train'",
        f"dataloader.test.0.dataset.root='{tmp_path}/digits/val'",
        f"train.output_dir='{tmp_path}/out'", "train.train_epoch=0", "train.train_iter=3",
        "train.evaluation.eval_period=3", "train.log_period=1",
    ])
    assert trainer.test_loader[0].dataset.classes == [str(d) for d in range(10)]
    assert len([line for line in lines if "total_loss" in line]) == 3
    assert [line["Acc@1"] for line in lines if "Acc@1" in line][-1] >= 0.0


def test_text_classification_project_pretrains_then_finetunes_from_the_checkpoint(tmp_path):
    data = tmp_path / "text"
    counts = make_task(str(data))
    # the lexicon's labelled senses, split by word; the numbers the README quotes
    assert counts == {"train": 1337, "dev": 388, "corpus_docs": 551}
    first = json.loads((data / "train.jsonl").read_text().splitlines()[0])
    assert set(first) == {"text", "label"} and ": " in first["text"]
    (vocab,) = train_vocab(str(data / "corpus.jsonl"), str(data / "vocab"), kind="wordpiece",
                           vocab_size=300, json_key="text")
    tokenizer = BertTokenizer(vocab_file=vocab, do_lower_case=True)
    prefix = preprocess_jsonl(str(data / "corpus.jsonl"), str(data / "corpus"), tokenizer,
                              split_sentences=True, log=lambda msg: None).outputs["text"]
    assert prefix == str(data / "corpus_text_sentence")
    small = [f"model.cfg.vocab_size={len(tokenizer)}"]
    vocab_overrides = [f"tokenization.tokenizer.vocab_file='{vocab}'",
                       f"dataloader.train.dataset.0.tokenizer.vocab_file='{vocab}'",
                       f"dataloader.test.0.dataset.tokenizer.vocab_file='{vocab}'"] + small
    _, pre_lines = _train("projects/text_classification/configs/pretrain.py", vocab_overrides + [
        f"dataloader.train.dataset.0.data_prefix='{prefix}'", f"dataloader.test.0.dataset.data_prefix='{prefix}'",
        f"train.output_dir='{tmp_path}/pre'", "train.train_iter=2", "train.evaluation.eval_period=2",
        "train.evaluation.eval_iter=1", "train.log_period=1",
    ])
    assert math.isfinite(pre_lines[-1]["PPL"])
    pretrained = flow.load(os.path.join(tmp_path, "pre", "model_final", "model"))
    trainer, lines = _train("projects/text_classification/configs/finetune.py", vocab_overrides + [
        f"dataloader.train.dataset.0.data_file='{data}/train.jsonl'",
        f"dataloader.test.0.dataset.data_file='{data}/dev.jsonl'",
        f"train.load_weight='{tmp_path}/pre/model_final'", f"train.output_dir='{tmp_path}/fine'",
        "train.train_epoch=0", "train.train_iter=2", "train.evaluation.eval_period=2",
        "train.evaluation.eval_iter=1", "train.log_period=1",
    ])
    report = trainer.checkpointer.last_load_report
    assert sorted(report.missing_keys) == ["classifier.bias", "classifier.weight"]
    assert report.unexpected_keys and all(k.startswith("cls_head.") for k in report.unexpected_keys)
    # the encoder started from the pretrained weights: the position embeddings barely moved in 2 steps
    key = next(k for k in pretrained if k.startswith("bert.") and "position" in k)
    now = trainer.model.state_dict()[key].numpy()
    assert np.abs(now - pretrained[key].numpy()).max() < 0.05
    assert [line["Acc@1"] for line in lines if "Acc@1" in line]
