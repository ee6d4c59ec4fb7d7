"""GPT2Tokenizer's ``tokenizers`` backend gives exactly the ids of libai's Python BPE."""
import copy
import pydoc_data.topics as topics

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libai.tokenizer import GPT2Tokenizer, RobertaTokenizer
from libai.tokenizer.fast_backend import byte_level_bpe_backend
from tokenizer_samples import CORPUS

# Letters, marks, numbers, punctuation, symbols, spaces (ASCII and others), controls, CJK, emoji.
_TEXT = st.text(st.characters(codec="utf-8", categories=("L", "M", "N", "P", "S", "Z", "Cc")),
                max_size=60)


def _python_path(tokenizer):
    slow = copy.copy(tokenizer)
    slow.use_fast_backend = False
    return slow


def test_the_backend_is_used_and_gives_the_python_ids_on_real_text(gpt2):
    assert gpt2._fast_backend() is not None
    slow = _python_path(gpt2)
    texts = CORPUS + [text[:2000] for _, text in sorted(topics.topics.items())[:40]]
    texts += ["a<|endoftext|>b  <|endoftext|>\n c", "   ", "\u2028x\u00a0y\u3000z", "'s'S'll 12345"]
    for text in texts:
        assert gpt2.encode(text) == slow.encode(text), text[:50]
    assert gpt2.encode(texts[:3], add_special_tokens=True) == slow.encode(texts[:3], add_special_tokens=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT)
def test_same_ids_on_any_text(gpt2, text):
    assert gpt2.encode(text) == _python_path(gpt2).encode(text)


def test_roberta_and_added_tokens_take_the_backend_too(bpe_files):
    roberta = RobertaTokenizer(*bpe_files)
    roberta.add_tokens(["lazy dog"])
    slow = _python_path(roberta)
    for text in CORPUS:
        assert roberta.encode(text, add_special_tokens=True) == slow.encode(text, add_special_tokens=True)


def test_files_the_backend_would_not_reproduce_keep_the_python_path(gpt2):
    encoder = gpt2.encoder
    merges = gpt2.merges
    assert byte_level_bpe_backend(encoder, merges) is not None
    del encoder[merges[0][0] + merges[0][1]]
    assert byte_level_bpe_backend(encoder, merges) is None


def test_a_subclass_with_its_own_bpe_keeps_it(bpe_files):
    class Upper(GPT2Tokenizer):
        def bpe(self, pretoken):
            return super().bpe(pretoken)

    assert Upper(*bpe_files)._fast_backend() is None


def _bert_variants(bert_vocab_file):
    from libai.tokenizer import BertTokenizer
    yield BertTokenizer(bert_vocab_file)
    yield BertTokenizer(bert_vocab_file, do_lower_case=False)
    yield BertTokenizer(bert_vocab_file, strip_accents=False, tokenize_chinese_chars=False)


_BERT_TEXTS = ["Hello, World! unaffable running", "Café naïve 今天天气 $50 [MASK] emoji 😀",
               "  \t\x00weird\u200b spacing\ufffd\u00a0here  ", "Ünaffable HELLO.world", "a" * 150,
               "[CLS] hello [SEP] world [SEP]"]


def test_bert_takes_the_backend_and_gives_the_python_ids(bert_vocab_file):
    for bert in _bert_variants(bert_vocab_file):
        assert bert._fast_backend() is not None
        slow = _python_path(bert)
        for text in _BERT_TEXTS:
            assert bert.encode(text, add_special_tokens=True) == slow.encode(text, add_special_tokens=True), text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT)
def test_bert_same_ids_on_any_text(bert_vocab_file, text):
    for bert in _bert_variants(bert_vocab_file):
        assert bert.encode(text) == _python_path(bert).encode(text)


def test_bert_options_the_backend_lacks_keep_the_python_path(bert_vocab_file):
    from libai.tokenizer import BertTokenizer
    assert BertTokenizer(bert_vocab_file, never_split=["hello"])._fast_backend() is None
    assert BertTokenizer(bert_vocab_file, do_basic_tokenize=False)._fast_backend() is None
