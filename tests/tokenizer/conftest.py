"""Fixtures for the tokenizer tests: tiny vocabularies written by hand or trained on the spot."""
import pytest

from libai.tokenizer import GPT2Tokenizer, train_bpe
from libai.tokenizer.vocab_files import save_bpe_vocab, save_merges
from tokenizer_samples import BERT_TOKENS, CORPUS, write_lines


@pytest.fixture
def bert_vocab_file(tmp_path):
    """Path of a vocab.txt holding BERT_TOKENS."""
    return write_lines(tmp_path / "vocab.txt", BERT_TOKENS)


@pytest.fixture(scope="module")
def bpe_files(tmp_path_factory):
    """(vocab.json, merges.txt) trained on CORPUS (repeated, so pairs reach min_frequency)."""
    directory = str(tmp_path_factory.mktemp("bpe"))
    vocab, merges = train_bpe(CORPUS * 3, vocab_size=400)
    return save_bpe_vocab(vocab, directory), save_merges(merges, directory)


@pytest.fixture(scope="module")
def gpt2(bpe_files):
    """A GPT2Tokenizer over the trained files (shared: tokenizers are read-only in use)."""
    return GPT2Tokenizer(*bpe_files)

