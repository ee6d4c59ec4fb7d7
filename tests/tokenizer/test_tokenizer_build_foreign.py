"""A project's own tokenizer class goes through ``build_tokenizer`` and the trainer untouched.

LiBai's Llama and Baichuan projects wrap a SentencePiece model in a plain class (no libai base
class, no ``padded_vocab_size``); LiBai builds it and leaves the model's ``vocab_size`` alone.
"""
import pytest
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.engine import DefaultTrainer
from libai.tokenizer import build_tokenizer


class PieceTable:
    """A stand-in for such a class: encode() over a fixed table."""

    def __init__(self, pieces):
        self.pieces = list(pieces)

    def encode(self, text):
        return [self.pieces.index(p) for p in text.split()]


def _tokenization(**node):
    cfg = OmegaConf.create()
    cfg.tokenizer = LazyCall(PieceTable)(**node)
    cfg.make_vocab_size_divisible_by = 128
    return cfg


def test_a_foreign_tokenizer_is_returned_as_built():
    tokenizer = build_tokenizer(_tokenization(pieces=["a", "b", "c"]))
    assert isinstance(tokenizer, PieceTable)
    assert tokenizer.encode("c a") == [2, 0]
    assert not hasattr(tokenizer, "padded_vocab_size")


def test_an_object_that_cannot_tokenize_is_still_refused():
    cfg = OmegaConf.create()
    cfg.tokenizer = LazyCall(dict)(a=1)
    with pytest.raises(TypeError, match="nor an object with an encode"):
        build_tokenizer(cfg)


def test_the_trainer_keeps_the_models_vocab_size_for_a_foreign_tokenizer():
    cfg = OmegaConf.create({"model": {"cfg": {"vocab_size": 77}}})
    cfg.tokenization = _tokenization(pieces=["x"])
    tokenizer = DefaultTrainer.build_tokenizer(cfg)
    assert isinstance(tokenizer, PieceTable)
    assert cfg.model.cfg.vocab_size == 77
