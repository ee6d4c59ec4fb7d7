"""build_tokenizer and pad_vocab_size."""
import pytest
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.tokenizer import BertTokenizer, GPT2Tokenizer, build_tokenizer, pad_vocab_size
from libai.utils import distributed as dist


@pytest.mark.parametrize("size, multiple, expected", [
    (30, 128, 128), (128, 128, 128), (129, 128, 256), (30522, 128, 30592), (0, 8, 0), (7, 1, 7),
])
def test_pad_vocab_size(size, multiple, expected):
    assert pad_vocab_size(size, multiple) == expected


@pytest.mark.parametrize("size, multiple, message", [
    (10, 0, "multiple must be an int >= 1, got 0"),
    (-1, 8, "size must be an int >= 0, got -1"),
    (10, 2.5, "multiple must be an int >= 1, got 2.5"),
])
def test_pad_vocab_size_errors(size, multiple, message):
    with pytest.raises(ValueError, match=message):
        pad_vocab_size(size, multiple)


def _tokenization(vocab_file, **extra):
    cfg = OmegaConf.create()
    cfg.tokenizer = LazyCall(BertTokenizer)(vocab_file=vocab_file, do_lower_case=True)
    cfg.append_eod = False
    for key, value in extra.items():
        cfg[key] = value
    return cfg


def test_build_from_lazy_call_pads_to_the_multiple(bert_vocab_file):
    tok = build_tokenizer(_tokenization(bert_vocab_file, make_vocab_size_divisible_by=128))
    assert isinstance(tok, BertTokenizer) and tok.encode("hello", add_special_tokens=True) == [2, 8, 3]
    assert len(tok) == 30 and tok.padded_vocab_size == 128


def test_tensor_parallel_size_multiplies_the_multiple(bert_vocab_file):
    cfg = _tokenization(bert_vocab_file, make_vocab_size_divisible_by=16)
    assert build_tokenizer(cfg, tensor_parallel_size=4).padded_vocab_size == 64
    layout = dist.ParallelLayout.from_config(
        {"device_type": "cpu", "tensor_parallel_size": 2}, world_size=2, rank=0)
    with layout:  # taken from the active layout when not given
        assert build_tokenizer(cfg).padded_vocab_size == 32
    assert build_tokenizer(cfg).padded_vocab_size == 32  # one rank: 30 -> 32


def test_without_a_multiple_the_padded_size_is_the_size(bert_vocab_file):
    tok = build_tokenizer(_tokenization(bert_vocab_file))
    assert tok.padded_vocab_size == len(tok) == 30
    tok = build_tokenizer(_tokenization(bert_vocab_file, make_vocab_size_divisible_by=None))
    assert tok.padded_vocab_size == 30


def test_added_tokens_count_toward_the_padded_size(bert_vocab_file):
    cfg = _tokenization(bert_vocab_file, make_vocab_size_divisible_by=4)
    cfg.tokenizer.additional_special_tokens = [f"<extra_id_{i}>" for i in range(3)]
    tok = build_tokenizer(cfg)
    assert len(tok) == 33 and tok.padded_vocab_size == 36


def test_build_gpt2_from_plain_dict_with_string_target(bpe_files):
    cfg = {
        "tokenizer": {"_target_": "libai.tokenizer.GPT2Tokenizer",
                      "vocab_file": bpe_files[0], "merges_file": bpe_files[1]},
        "make_vocab_size_divisible_by": 128,
    }
    tok = build_tokenizer(cfg)
    assert isinstance(tok, GPT2Tokenizer) and len(tok) == 400 and tok.padded_vocab_size == 512


def test_build_from_registry_name_and_from_an_instance(bert_vocab_file):
    cfg = OmegaConf.create({"tokenizer": {"name": "BertTokenizer", "vocab_file": bert_vocab_file},
                            "make_vocab_size_divisible_by": 8})
    assert build_tokenizer(cfg).padded_vocab_size == 32
    ready = BertTokenizer(bert_vocab_file)
    assert build_tokenizer({"tokenizer": ready}) is ready


def test_build_errors(bert_vocab_file, tmp_path):
    with pytest.raises(ValueError, match="has no 'tokenizer'"):
        build_tokenizer({"append_eod": False})
    with pytest.raises(ValueError, match="unknown tokenizer name 'Bort'"):
        build_tokenizer({"tokenizer": {"name": "Bort", "vocab_file": bert_vocab_file}})
    with pytest.raises(TypeError, match="built a dict, not a libai tokenizer"):
        build_tokenizer({"tokenizer": LazyCall(dict)(a=1)})
    missing = str(tmp_path / "missing_vocab.txt")
    with pytest.raises(Exception, match="vocabulary file not found: .*missing_vocab.txt") as info:
        build_tokenizer(_tokenization(missing))
    assert "train_vocab.py" in str(info.value)


def test_padded_size_cannot_shrink(bert_vocab_file):
    tok = BertTokenizer(bert_vocab_file)
    with pytest.raises(ValueError, match="padded_vocab_size must be an int >= len\\(tokenizer\\) \\(30\\)"):
        tok.padded_vocab_size = 16
