"""LiBai's ready configs (upstream ``configs/``) as conformance cases.

Each case copies the whole ``configs/`` folder (the eleven files and the ``common/`` they import)
unchanged into its scratch folder, writes tiny data at the relative paths the config names
(``./data_test/...``, ``./cifar-100-python``) or, for absolute placeholders such as
``/path/to/imagenet``, beside it with an override naming it, and shrinks the run from the
command line only: model sizes, iterations, batch sizes, sequence lengths, workers.
"""
import os
import shutil
from typing import Callable, Dict, List

from . import data
from .common import Case, Prepared, copy_tree

# every config: 4 iterations of 2 samples, evaluation after the last one, a checkpoint to reload
COMMON = [
    "train.train_iter=4", "train.train_epoch=0", "train.train_micro_batch_size=2",
    "train.test_micro_batch_size=2", "train.evaluation.enabled=True",
    "train.evaluation.eval_period=4", "train.evaluation.eval_iter=2", "train.log_period=1",
    "train.checkpointer.period=4", "train.dist.data_parallel_size=1",
    "train.dist.tensor_parallel_size=1", "train.dist.pipeline_parallel_size=1",
    "dataloader.train.num_workers=0",
]
# upstream LiBai picks CUDA unless told; its evaluation pads batches on a hard-coded "cuda"
# placement (libai/evaluation/utils.py), so upstream runs train without evaluation here
UPSTREAM = ["train.dist.device_type=cpu", "train.input_placement_device=cpu",
            "train.evaluation.enabled=False"]
# upstream's text models call CUDA-only fused kernels when these are on (libai picks the fused
# op by device itself, so libai runs the configs as they are)
UPSTREAM_UNFUSED = ["model.cfg.bias_gelu_fusion=False", "model.cfg.bias_dropout_fusion=False",
                    "model.cfg.scale_mask_softmax_fusion=False"]
SEQ = 64


def _text_shrink(seq_keys: List[str], test_keys: List[str]) -> List[str]:
    out = []
    for key in seq_keys:
        out.append(f"dataloader.train.dataset.0.{key}")
    for key in test_keys:
        out.append(f"dataloader.test.0.dataset.{key}")
    return out


def _copy_configs(libai_src: str, scratch: str) -> str:
    return copy_tree(os.path.join(libai_src, "configs"), os.path.join(scratch, "configs"))


def _place_corpus(corpus: data.TextCorpus, folder: str, names: Dict[str, str]) -> None:
    """Move a corpus and its vocabulary to the file names a config expects."""
    os.makedirs(folder, exist_ok=True)
    for ext in (".bin", ".idx"):
        shutil.move(corpus.prefix + ext, os.path.join(folder, names["prefix"] + ext))
    shutil.move(corpus.vocab_file, os.path.join(folder, names["vocab"]))
    if corpus.merges_file:
        shutil.move(corpus.merges_file, os.path.join(folder, names["merges"]))


def _bert_like(config: str, folder: str, seq_keys: List[str], model: List[str],
               corpus_fn: Callable, names: Dict[str, str], test_seq_keys=None,
               test_prefix: bool = False) -> Callable:
    """``test_prefix``: the config leaves its test set at LiBai's machine path
    (``/workspace/...``); point it at the tiny corpus from the command line."""
    def prepare(libai_src: str, scratch: str) -> Prepared:
        configs = _copy_configs(libai_src, scratch)
        jsonl = data.write_jsonl(os.path.join(scratch, "raw", "corpus.jsonl"))
        corpus = corpus_fn(os.path.join(scratch, "raw"), jsonl)
        _place_corpus(corpus, os.path.join(scratch, "data_test", folder), names)
        seq = [f"{k}={v}" for k, v in seq_keys]
        test_seq = [f"{k}={v}" for k, v in (test_seq_keys or seq_keys)]
        overrides = COMMON + model + [
            f"dataloader.train.dataset.0.{s}" for s in seq] + [
            f"dataloader.test.0.dataset.{s}" for s in test_seq]
        if test_prefix:
            prefix = os.path.join(scratch, "data_test", folder, names["prefix"])
            overrides += [f"dataloader.test.0.dataset.data_prefix={prefix}",
                          f"dataloader.test.0.dataset.indexed_dataset.data_prefix={prefix}"]
        return Prepared(os.path.join(configs, config), overrides,
                        upstream_overrides=UPSTREAM + UPSTREAM_UNFUSED)

    return prepare


_BERT_NAMES = {"prefix": "loss_compara_content_sentence", "vocab": "bert-base-chinese-vocab.txt"}
_BERT_MODEL = ["model.cfg.hidden_size=32", "model.cfg.num_attention_heads=2",
               "model.cfg.intermediate_size=64", "model.cfg.hidden_layers=2",
               f"model.cfg.max_position_embeddings={SEQ}", "train.dist.pipeline_num_layers=2"]


def _vision(config: str, model: List[str], imagenet: bool) -> Callable:
    def prepare(libai_src: str, scratch: str) -> Prepared:
        configs = _copy_configs(libai_src, scratch)
        overrides = COMMON + model + ["dataloader.test.0.num_workers=0"]
        if imagenet:
            root = data.write_imagenet(os.path.join(scratch, "imagenet"))
            overrides += [f"dataloader.train.dataset.0.root={root}",
                          f"dataloader.test.0.dataset.root={root}"]
        else:  # the config reads ./cifar-100-python (root="./")
            data.write_cifar100(scratch)
        return Prepared(os.path.join(configs, config), overrides, upstream_overrides=UPSTREAM)

    return prepare


_SWIN = ["model.cfg.embed_dim=24", "model.cfg.depths=[1,1,1,1]", "train.dist.pipeline_num_layers=4"]
_VIT = ["model.cfg.embed_dim=32", "model.cfg.depth=2", "model.cfg.num_heads=2",
        "train.dist.pipeline_num_layers=2"]
_RESMLP = ["model.cfg.embed_dim=32", "model.cfg.depth=2", "train.dist.pipeline_num_layers=2"]


def cases() -> List[Case]:
    """The eleven ready configs of LiBai 9dcbe3b, in its ``configs/`` order."""
    bert_seq = [("max_seq_length", SEQ)]
    t5_seq = [("max_seq_length", SEQ), ("max_seq_length_dec", 16)]
    return [
        Case("bert_classification", "config", _bert_like(
            "bert_classification.py", "bert_data", bert_seq, _BERT_MODEL, data.bert_corpus,
            _BERT_NAMES, test_prefix=True)),
        Case("bert_large_pretrain", "config", _bert_like(
            "bert_large_pretrain.py", "bert_data", bert_seq, _BERT_MODEL, data.bert_corpus,
            _BERT_NAMES)),
        Case("gpt2_pretrain", "config", _bert_like(
            "gpt2_pretrain.py", "gpt_data", bert_seq,
            ["model.cfg.hidden_size=32", "model.cfg.num_attention_heads=2",
             "model.cfg.ffn_hidden_size=64", "model.cfg.hidden_layers=2",
             f"model.cfg.max_seq_length={SEQ}", "train.dist.pipeline_num_layers=2"],
            data.gpt2_corpus, {"prefix": "loss_compara_content_sentence",
                               "vocab": "gpt2-vocab.json", "merges": "gpt2-merges.txt"})),
        Case("resmlp_imagenet", "config", _vision("resmlp_imagenet.py", _RESMLP, True)),
        Case("roberta_pretrain", "config", _bert_like(
            "roberta_pretrain.py", "roberta_data", bert_seq,
            [o.replace(f"max_position_embeddings={SEQ}", f"max_position_embeddings={SEQ + 2}")
             for o in _BERT_MODEL],
            data.roberta_corpus, {"prefix": "loss_compara_content_sentence",
                                  "vocab": "roberta-vocab.json", "merges": "roberta-merges.txt"})),
        Case("swin_cifar100", "config", _vision("swin_cifar100.py", _SWIN, False)),
        Case("swin_imagenet", "config", _vision("swin_imagenet.py", _SWIN, True)),
        Case("swinv2_cifar100", "config", _vision("swinv2_cifar100.py", _SWIN, False)),
        Case("swinv2_imagenet", "config", _vision("swinv2_imagenet.py", _SWIN, True)),
        Case("t5_large_pretrain", "config", _bert_like(
            "t5_large_pretrain.py", "bert_data", t5_seq,
            [o for o in _BERT_MODEL if "pipeline" not in o] + ["train.dist.pipeline_num_layers=4"],
            data.bert_corpus, _BERT_NAMES)),
        Case("vit_imagenet", "config", _vision("vit_imagenet.py", _VIT, True)),
    ]
