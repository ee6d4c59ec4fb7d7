"""DefaultTrainer builds ``cfg.tokenization`` as LiBai's does: the tokenizer reaches every
dataset node that takes one (so overriding ``tokenization.tokenizer.vocab_file`` is enough), the
model's ``vocab_size`` becomes the tokenizer's padded size, and the held-out parts a training
loader cuts from its corpus (``splits``) are evaluated with ``dataloader.test``."""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_nlp_train_loader
from libai.engine import DefaultTrainer
from libai.tokenizer import BertTokenizer

from toy import ToyDataset, toy_cfg

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat"]


class TokenizedToy(ToyDataset):
    """The toy samples, remembering the tokenizer the trainer handed over."""

    seen = []

    def __init__(self, tokenizer=None, n: int = 64, seed: int = 0) -> None:
        super().__init__(n=n, seed=seed)
        TokenizedToy.seen.append(tokenizer)


def _vocab(tmp_path, words):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(words) + "\n")
    return str(path)


def test_tokenizer_reaches_datasets_and_sets_the_vocabulary(tmp_path):
    TokenizedToy.seen.clear()
    cfg = toy_cfg(str(tmp_path / "out"), train_iter=2)
    cfg.tokenization = OmegaConf.create()
    cfg.tokenization.tokenizer = LazyCall(BertTokenizer)(vocab_file="/missing/vocab.txt")
    cfg.tokenization.make_vocab_size_divisible_by = 8
    cfg.dataloader.train.dataset = [LazyCall(TokenizedToy)(tokenizer=None)]
    cfg.dataloader.test = [LazyCall(cfg.dataloader.test[0]._target_)(
        dataset=LazyCall(TokenizedToy)(tokenizer=None, n=16, seed=1), num_workers=0)]
    # the user overrides the one tokenizer node; every dataset gets the tokenizer built from it
    cfg.tokenization.tokenizer.vocab_file = _vocab(tmp_path, WORDS)
    cfg.model.cfg = {"vocab_size": 3}  # a model config with a vocabulary size
    cfg.model._target_ = "toy.ToyModel"
    cfg.model.hidden = 8
    trainer = _build_without_model_cfg(cfg)
    assert len(TokenizedToy.seen) == 2
    assert all(isinstance(t, BertTokenizer) and t is trainer.tokenizer for t in TokenizedToy.seen)
    assert cfg.model.cfg.vocab_size == 16  # 10 words padded to a multiple of 8


def _build_without_model_cfg(cfg):
    """ToyModel takes no ``cfg``: build it without that key once the tokenizer has set it."""

    class Trainer(DefaultTrainer):
        @classmethod
        def build_model(cls, cfg):
            from libai.config import instantiate

            node = {k: cfg.model[k] for k in cfg.model if k != "cfg"}
            return instantiate(node)

    return Trainer(cfg)


def test_held_out_splits_are_evaluated(tmp_path):
    cfg = toy_cfg(str(tmp_path / "out"), train_iter=3)
    cfg.dataloader.train = LazyCall(build_nlp_train_loader)(
        dataset=[LazyCall(ToyDataset)(n=80)], splits=[[6, 2, 2]], num_workers=0)
    cfg.dataloader.test = []
    cfg.train.evaluation.eval_period = 3
    trainer = DefaultTrainer(cfg)
    assert len(trainer.test_loader) == 2  # valid and test parts, no dataloader.test
    assert [len(loader.dataset) for loader in trainer.test_loader] == [16, 16]
    results = trainer.train()
    assert any(key.endswith("Acc@1") for key in results), results


def test_no_tokenization_means_no_tokenizer(tmp_path):
    trainer = DefaultTrainer(toy_cfg(str(tmp_path / "out"), train_iter=1))
    assert trainer.tokenizer is None
