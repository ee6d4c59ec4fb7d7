"""Mistakes a new user makes, each with the words its message must contain.

Grown from what users (and helpers trying the docs as users) tripped over: config, data,
launch, checkpoint, weights and tools. Each case is a function that makes the mistake and
returns what the user sees: the message of the error it raised, or the warnings it logged. A
case passes when every listed word is in that text, so a message that stops naming its fix
fails here. All run in this process, in seconds, except the last (one end-to-end run that
used to abort OneFlow).
"""
import json
import logging
import os
import subprocess
import sys
from typing import Callable, Dict, List, Tuple

import numpy as np
import oneflow as flow
import pytest
from omegaconf import OmegaConf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MNIST_CONFIG = os.path.join(REPO, "projects", "MNIST", "configs", "config.py")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "hf")


def raised(fn: Callable[[], object]) -> str:
    """The text of what ``fn`` raised (type and message); fails when it raised nothing."""
    try:
        fn()
    except SystemExit as exit_:
        return f"SystemExit: {exit_.code}"
    except BaseException as error:  # noqa: BLE001 - the message is what we check
        return f"{type(error).__name__}: {error}"
    pytest.fail("the mistake raised nothing")


def logged(fn: Callable[[], object], level: int = logging.WARNING) -> str:
    """The messages logged at ``level`` or above while ``fn`` runs (it must not raise)."""
    records: List[str] = []
    handler = logging.Handler(level)
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[assignment]
    root = logging.getLogger("libai")
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(min(level, root.level or level))
    try:
        fn()
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    return "\n".join(records)


# ------------------------------------------------------------------------------------ config
def load(*opts: str, config: str = MNIST_CONFIG, flags: Tuple[str, ...] = ()):
    from libai.config import default_argument_parser
    from libai.engine.cli import load_config

    return load_config(default_argument_parser().parse_args(["--config-file", config, *flags, *opts]))


def _train(**values):
    base = dict(train_micro_batch_size=8, global_batch_size=None, num_accumulation_steps=None,
                train_iter=10, train_epoch=0, train_samples=None, warmup_ratio=0.0)
    base.update(values)
    return OmegaConf.create(base)


def _plan(dataset_size: int = 1000, **values):
    from libai.engine.train_plan import resolve_batch_sizes, resolve_iterations

    t = _train(**values)
    return resolve_iterations(t, resolve_batch_sizes(t, 1), dataset_size)


class _Trainer:
    """A bare loop for hook mistakes."""

    def __new__(cls):
        from libai.engine.trainer import TrainerBase

        class Loop(TrainerBase):
            def run_step(self):
                pass

        return Loop()


def eval_metric_typo():
    from libai.engine import hooks

    class Ckpt:
        def save(self, *args, **kwargs):
            pass

    trainer = _Trainer()
    trainer.register_hooks([hooks.EvalHook(2, lambda: {"Acc@1": 50.0, "Acc@5": 90.0}),
                            hooks.BestCheckpointer(2, Ckpt(), "Acc@9")])
    trainer.train(0, 100)


def iterations_and_epochs():
    _plan(dataset_size=9600, train_micro_batch_size=64, train_iter=6, train_epoch=30)


def hook_anchor():
    from libai.engine.hooks import HookBase

    _Trainer().register_hooks([HookBase()], after="EvalHoook")


def hook_type():
    _Trainer().register_hooks([lambda: None])


def early_stopping_patience():
    from libai.engine.hooks import EarlyStopping

    EarlyStopping(2, "Acc@1", "max", patience=0)


def best_mode():
    from libai.engine.hooks import BestCheckpointer

    BestCheckpointer(2, None, "Acc@1", mode="maximum")


# ------------------------------------------------------------------------------------ data
def mnist():
    from projects.MNIST.modeling.model import MNISTClassifier
    from libai.engine.hooks.input_check import install_input_checks

    model = MNISTClassifier().train()
    install_input_checks(model)
    return model


def tiny_gpt(max_seq_length: int = 16):
    from libai.engine.hooks.input_check import install_input_checks
    from libai.models import GPTForPreTraining
    from libai.utils.distributed import ParallelLayout

    with ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0):
        model = GPTForPreTraining(dict(vocab_size=96, hidden_size=32, hidden_layers=1, num_attention_heads=4,
                                       intermediate_size=64, max_seq_length=max_seq_length))
    install_input_checks(model)
    return model


def loader(**kwargs):
    from libai.data.build import build_image_train_loader

    class Numbers(flow.utils.data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return flow.tensor([i])

    args = dict(dataset=Numbers(), train_batch_size=2, num_workers=0)
    args.update(kwargs)
    return build_image_train_loader(**args)


def nlp_loader(**kwargs):
    from libai.data.build import build_nlp_train_loader

    class Numbers(flow.utils.data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return flow.tensor([i])

    args = dict(dataset=[Numbers(), Numbers()], train_batch_size=2, num_workers=0)
    args.update(kwargs)
    return build_nlp_train_loader(**args)


# ------------------------------------------------------------------------------------ weights
def classifier_from_base_bert():
    from libai.models import BertForClassification, BertModel

    model = BertForClassification.from_pretrained(os.path.join(FIXTURES, "bert"), num_labels=3)
    base = BertModel.from_pretrained(os.path.join(FIXTURES, "bert"))
    ours = dict(model.state_dict())
    for name, value in base.state_dict().items():  # the backbone loaded in full
        np.testing.assert_array_equal(ours["bert." + name].numpy(), value.numpy())


def activation_mismatch():
    from libai.models import BertModel
    from libai.models.pretrained import load_into

    model = BertModel.from_pretrained(os.path.join(FIXTURES, "bert"), activation="gelu_tanh")
    load_into(model, os.path.join(FIXTURES, "bert"))


def gpt_wrong_size():
    from libai.models import GPTForPreTraining

    GPTForPreTraining.from_pretrained(os.path.join(FIXTURES, "gpt2"), hidden_size=64, intermediate_size=128)


# ------------------------------------------------------------------------------------ tools
def onnx_seq_length(wanted):
    sys.path.insert(0, os.path.join(REPO, "tools"))
    try:
        from export_onnx import choose_seq_length
    finally:
        sys.path.pop(0)
    return choose_seq_length(tiny_gpt(16), wanted)


def plot_empty(tmp):
    from libai.utils.plot import plot_metrics

    path = os.path.join(tmp, "metrics.json")
    open(path, "w").close()
    plot_metrics(path, tmp)


def plot_no_numbers(tmp):
    from libai.utils.plot import plot_metrics

    path = os.path.join(tmp, "metrics.json")
    with open(path, "w") as f:
        f.write(json.dumps({"iteration": 0, "note": "x"}) + "\n")
    plot_metrics(path, tmp)


# Each case: (what goes wrong, how the user sees it, words the message must contain).
CASES: Dict[str, Tuple[Callable[..., object], Tuple[str, ...]]] = {
    # config: the command line and the config file
    "typo in a key": (lambda tmp: raised(lambda: load("train.train_itr=5")), ("train.train_iter", "+train.train_itr")),
    "learning_rate for lr": (lambda tmp: raised(lambda: load("optim.learning_rate=1e-3")), ("Did you mean optim.lr?",)),
    "weight decay typo": (lambda tmp: raised(lambda: load("optim.weight_dcay=0.1")), ("optim.weight_decay",)),
    "eval_period typo": (lambda tmp: raised(lambda: load("train.evaluation.eval_perod=3")),
                         ("train.evaluation.eval_period",)),
    "num_class for num_classes": (lambda tmp: raised(lambda: load("model.num_class=5")), ("model.num_classes",)),
    "override without =": (lambda tmp: raised(lambda: load("train.train_iter")), ("key=value", "train.train_iter=100")),
    "a word for a number": (lambda tmp: raised(lambda: load("train.train_iter=ten")),
                            ("train.train_iter", "a number", "train.train_iter=0")),
    "a word for a boolean": (lambda tmp: raised(lambda: load("graph.enabled=yes")), ("True or False",)),
    "config file path typo": (lambda tmp: raised(lambda: load(config="configs/vit_imagnet.py")),
                              ("no such file", "Available configs", "configs/vit_imagenet.py")),
    "config file in a missing folder": (lambda tmp: raised(lambda: load(config="confgs/gpt2_pretrain.py")),
                                        ("Available configs", "configs/gpt2_pretrain.py")),
    "eval_metric the evaluator does not report": (lambda tmp: raised(eval_metric_typo),
                                                  ("train.evaluation.eval_metric='Acc@9'", "['Acc@1', 'Acc@5']")),
    "train_iter in an epoch recipe": (lambda tmp: logged(iterations_and_epochs),
                                      ("train.train_iter=6", "4,500 iterations", "longest wins", "train.train_epoch=0")),
    "eval_mode not max/min": (lambda tmp: raised(best_mode), ("eval_mode must be 'max' or 'min'",)),
    "early stopping patience 0": (lambda tmp: raised(early_stopping_patience), ("patience must be >= 1",)),
    "inconsistent batch sizes": (lambda tmp: raised(lambda: _plan(global_batch_size=30, num_accumulation_steps=2)),
                                 ("global_batch_size (30)", "Set any two of them")),
    "global batch not a multiple": (lambda tmp: raised(lambda: _plan(global_batch_size=30)), ("not a multiple",)),
    "micro batch 0": (lambda tmp: raised(lambda: _plan(train_micro_batch_size=0)),
                      ("train_micro_batch_size must be a positive integer",)),
    "warmup ratio above 1": (lambda tmp: raised(lambda: _plan(warmup_ratio=5)), ("warmup_ratio must be in [0, 1]",)),
    "nothing to train": (lambda tmp: raised(lambda: _plan(train_iter=0)),
                         ("nothing to train", "train.train_iter", "train.train_epoch")),
    "epochs on too little data": (lambda tmp: raised(lambda: _plan(dataset_size=4, train_iter=0, train_epoch=2)),
                                  ("fewer than one global batch",)),
    "hook placed after an unknown hook": (lambda tmp: raised(hook_anchor), ("no registered hook named 'EvalHoook'",)),
    "a function registered as a hook": (lambda tmp: raised(hook_type), ("subclass libai.engine.trainer.HookBase",)),
    "--smoke keeps what the command line says": (
        lambda tmp: str(load("train.train_iter=7", flags=("--smoke",)).train.train_iter), ("7",)),
    # data
    "labels beyond num_classes": (lambda tmp: raised(lambda: mnist()(flow.randn(2, 784), flow.tensor([3, 12]))),
                                  ("label 12", "10 classes", "model.num_classes", "at least 13")),
    "negative labels": (lambda tmp: raised(lambda: mnist()(flow.randn(2, 784), flow.tensor([-1, 2]))),
                        ("label -1", "[0, 10)")),
    "float labels": (lambda tmp: raised(lambda: mnist()(flow.randn(2, 784), flow.tensor([1.0, 2.0]))),
                     ("must be integers",)),
    "token id beyond the vocabulary": (
        lambda tmp: raised(lambda: tiny_gpt()(flow.tensor(np.array([[1, 200]]), dtype=flow.long))),
        ("token id 200", "[0, 96)", "model.cfg.vocab_size")),
    "negative token id": (lambda tmp: raised(lambda: tiny_gpt()(flow.tensor(np.array([[-3, 2]]), dtype=flow.long))),
                          ("token id -3",)),
    "float token ids": (lambda tmp: raised(lambda: tiny_gpt()(flow.ones(1, 4))), ("ids must be integers",)),
    "sequence longer than the positions": (lambda tmp: raised(lambda: tiny_gpt(16)(flow.ones(1, 40, dtype=flow.long))),
                                           ("40 tokens", "max_position_embeddings")),
    "MNIST files missing": (lambda tmp: raised(lambda: __import__("libai.data.datasets", fromlist=["x"]).MNISTDataset(
        root=os.path.join(tmp, "mnist"))), ("MNIST train files not found", "train-images-idx3-ubyte")),
    "image folder missing": (lambda tmp: raised(lambda: __import__("libai.data.datasets", fromlist=["x"]).ImageFolderDataset(
        root=os.path.join(tmp, "images"))), ("does not exist", "one sub-folder per class")),
    "batch larger than the dataset": (lambda tmp: raised(lambda: loader(train_batch_size=64)),
                                      ("only 8", "lower the batch size")),
    "negative num_workers": (lambda tmp: raised(lambda: loader(num_workers=-1)), ("num_workers must be >= 0",)),
    "empty dataset list": (lambda tmp: raised(lambda: loader(dataset=[])), ("dataset list is empty",)),
    "rank without size": (lambda tmp: raised(lambda: loader(data_parallel_rank=0)),
                          ("pass both data_parallel_rank and data_parallel_size",)),
    "weights without a blending mixer": (lambda tmp: raised(lambda: nlp_loader(weights=[0.3, 0.7])),
                                         ("need a blending dataset_mixer",)),
    "bad split proportions": (lambda tmp: raised(lambda: nlp_loader(splits=[[1, -1, 0]], test_batch_size=2)),
                              ("three non-negative proportions",)),
    "model returns a tensor": (lambda tmp: raised(lambda: __import__("libai.engine.trainer", fromlist=["x"]).sum_losses(
        flow.ones(1))), ("must return a dict", "{'losses': loss}")),
    "model returns no loss": (lambda tmp: raised(lambda: __import__("libai.engine.trainer", fromlist=["x"]).sum_losses(
        {"logits": flow.ones(1)})), ("no loss", "field names must equal forward's argument names")),
    "loss key without loss": (lambda tmp: raised(lambda: _loss_compose(dict(foo=[dict(name="L1Loss")]))),
                              ("does not contain 'loss'", "foo_loss")),
    "loss name typo": (lambda tmp: raised(lambda: _loss_compose(dict(loss=[dict(name="L2Loz")]))),
                       ("L1Loss", "registered names")),
    "loss reads a missing output": (lambda tmp: raised(lambda: _loss_compose(dict(loss=[dict(name="L1Loss")]))(
        dict(out=flow.ones(1)))), ("'pred'", "not among the model outputs", "input_name")),
    "loss called with a tuple of the wrong length": (
        lambda tmp: raised(lambda: _loss_compose(dict(loss=[dict(name="L1Loss")]))((flow.ones(1),))),
        ("takes 2 inputs", "pred, target")),
    # launch
    "port out of range": (lambda tmp: raised(lambda: __import__("libai.launch", fromlist=["x"]).main(
        ["--master_port", "70000", "x.py"])), ("--master_port 70000", "between 0 and 65535")),
    "--no_python with --module": (lambda tmp: raised(lambda: _launch_command("--no_python", "--module", "x")),
                                  ("--no_python", "--module")),
    # checkpoints
    "resume from a missing checkpoint": (lambda tmp: raised(lambda: _checkpointer(tmp).load(
        os.path.join(tmp, "model_0000009"))), ("no checkpoint at", "does not exist")),
    "weights from a missing directory": (lambda tmp: raised(lambda: _checkpointer(tmp).load_weights_only(
        os.path.join(tmp, "nothing"))), ("no checkpoint at",)),
    "checkpointing an object without state": (lambda tmp: raised(lambda: _checkpointer(tmp, thing=3)),
                                              ("needs state_dict() and load_state_dict()",)),
    # pretrained weights
    "classifier from a base checkpoint": (lambda tmp: logged(classifier_from_base_bert),
                                          ("the task head classifier", "newly initialised", "backbone loaded")),
    "activation differs from config.json": (lambda tmp: logged(activation_mismatch),
                                            ("'gelu_tanh'", "hidden_act='gelu'", "outputs will differ")),
    "weights of another size": (lambda tmp: _short(raised(gpt_wrong_size)),
                                ("shape mismatch", "more shape mismatches", "SHORT")),
    "Hugging Face directory without config.json": (
        lambda tmp: raised(lambda: __import__("libai.models", fromlist=["x"]).BertModel.from_pretrained(tmp)),
        ("has no config.json",)),
    "tokenizer vocabulary missing": (lambda tmp: raised(lambda: __import__("libai.tokenizer", fromlist=["x"]).BertTokenizer(
        vocab_file=os.path.join(tmp, "vocab.txt"))), ("vocabulary file not found", "train_vocab.py")),
    # tools
    "export_onnx --seq-length beyond the positions": (lambda tmp: raised(lambda: onnx_seq_length(128)),
                                                      ("--seq-length 128", "16 positions", "--seq-length 16 or less")),
    "export_onnx default fits the model": (lambda tmp: str(onnx_seq_length(None)), ("16",)),
    "plot_metrics on a missing run": (lambda tmp: raised(lambda: __import__("libai.utils.plot", fromlist=["x"]).plot_metrics(
        os.path.join(tmp, "run"), tmp)), ("no metrics file", "metrics.json")),
    "plot_metrics on an empty file": (lambda tmp: raised(lambda: plot_empty(tmp)), ("holds no metrics lines",)),
    "plot_metrics with nothing numeric": (lambda tmp: raised(lambda: plot_no_numbers(tmp)), ("no numeric values",)),
}


def _loss_compose(spec):
    from libai.layers.loss_compose import LossKeyCompose

    return LossKeyCompose(spec)


def _launch_command(*argv):
    import libai.launch as launch

    return launch.rank_command(launch.parse_args(list(argv)))


def _checkpointer(tmp, **extra):
    from libai.utils.checkpoint import Checkpointer

    return Checkpointer(flow.nn.Linear(2, 2), tmp, **extra)


def _short(text: str) -> str:
    """The text, and SHORT when it fits a screen (a wrong-size model mismatches every tensor)."""
    return text + ("\nSHORT" if len(text) < 2000 else "")


def test_the_corpus_holds_at_least_fifty_mistakes():
    assert len(CASES) >= 50


@pytest.mark.parametrize("mistake", list(CASES))
def test_each_mistake_gets_a_message_naming_the_fix(mistake, tmp_path):
    make, words = CASES[mistake]
    text = make(str(tmp_path))
    missing = [w for w in words if w not in text]
    assert not missing, f"{mistake}: {missing} not in:\n{text}"


def test_an_image_folder_with_more_classes_than_the_model_stops_with_a_python_error(tmp_path):
    """docs/prepare_image_data.md and projects/image_classification both write digit folders
    (digit_N and N); in one tree that is 20 classes for a 10-class model, which made OneFlow
    abort (exit 134, no traceback, nothing saved)."""
    from PIL import Image

    for split in ("train", "val"):
        for label in range(20):
            folder = tmp_path / split / (f"digit_{label - 10}" if label >= 10 else str(label))
            folder.mkdir(parents=True)
            for i in range(2):
                Image.fromarray(np.full((32, 32, 3), 10 * label + i, np.uint8)).save(folder / f"{i}.png")
    cmd = [sys.executable, os.path.join(REPO, "tools", "train_net.py"), "--config-file",
           os.path.join(REPO, "projects", "image_classification", "configs", "vit_digits.py"), "--smoke",
           f"dataloader.train.dataset.0.root='{tmp_path / 'train'}'",
           f"dataloader.test.0.dataset.root='{tmp_path / 'val'}'",
           f"train.output_dir='{tmp_path / 'out'}'", "train.train_micro_batch_size=16"]
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output[-3000:]  # a Python error, not SIGABRT's 134
    assert "InputCheckError" in output and "model.num_classes" in output and "20 classes" not in output
    assert "but the model predicts 10 classes" in output, output[-3000:]
