"""Training small vocabularies from a corpus: byte-level BPE (GPT-2 style) and WordPiece (BERT).

Both trainers cut text exactly the way the matching tokenizer does (GPT-2 pre-tokens; BERT's
basic tokenizer), count the words, and learn merges with
:func:`~libai.tokenizer.merge_learner.learn_merges`. The WordPiece vocabulary is learned the
BPE way, by frequency (as the HuggingFace ``tokenizers`` trainer also does), and kept as the
list of pieces that BERT's greedy longest-match encoder then uses.
"""
import re
from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from libai.tokenizer.byte_level import Pretokenizer, bytes_to_unicode
from libai.tokenizer.corpus import iter_corpus
from libai.tokenizer.merge_learner import Pair, learn_merges
from libai.tokenizer.vocab_files import save_bpe_vocab, save_merges, save_wordpiece_vocab
from libai.tokenizer.wordpiece import BasicTokenizer

__all__ = [
    "train_bpe",
    "train_wordpiece",
    "train_vocab",
    "BPE_SPECIAL_TOKENS",
    "WORDPIECE_SPECIAL_TOKENS",
]

BPE_SPECIAL_TOKENS = ("<|endoftext|>",)
WORDPIECE_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _without_specials(texts: Iterable[str], special_tokens: Sequence[str]) -> Iterable[str]:
    """The text between special tokens: a corpus that separates documents with
    ``<|endoftext|>`` must not teach merges across (or inside) the separator."""
    if not special_tokens:
        yield from texts
        return
    splitter = re.compile("|".join(map(re.escape, sorted(special_tokens, key=len, reverse=True))))
    for text in texts:
        yield from (piece for piece in splitter.split(text) if piece)


def train_bpe(
    texts: Iterable[str],
    vocab_size: int,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = BPE_SPECIAL_TOKENS,
) -> Tuple[Dict[str, int], List[Pair]]:
    """Train a byte-level BPE vocabulary; return ``(vocab, merges)`` for ``vocab.json`` and
    ``merges.txt``.

    Ids 0..255 are the 256 single bytes (in byte order), so every text can be encoded; then
    come the merged tokens in the order learned, then ``special_tokens``. The vocabulary is
    smaller than ``vocab_size`` when the corpus runs out of pairs seen ``min_frequency`` times.
    """
    alphabet = [bytes_to_unicode()[byte] for byte in range(256)]
    specials = [t for t in dict.fromkeys(special_tokens) if t not in alphabet]
    minimum = len(alphabet) + len(specials)
    if vocab_size < minimum:
        raise ValueError(
            f"vocab_size={vocab_size} is too small for byte-level BPE: the 256 byte tokens and "
            f"{len(specials)} special token(s) need at least {minimum}"
        )
    pretokenize = Pretokenizer()
    pretoken_counts: Counter = Counter()
    for piece in _without_specials(texts, specials):
        pretoken_counts.update(pretokenize(piece))
    byte_encoder = bytes_to_unicode()
    word_counts: Counter = Counter()
    for pretoken, count in pretoken_counts.items():
        word_counts[tuple(byte_encoder[b] for b in pretoken.encode("utf-8"))] += count
    merges = learn_merges(word_counts, vocab_size - minimum, min_frequency=min_frequency,
                          known_symbols=alphabet + specials)
    vocab = {symbol: index for index, symbol in enumerate(alphabet)}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    for token in specials:
        vocab.setdefault(token, len(vocab))
    return vocab, merges


def _wordpiece_join(left: str, right: str) -> str:
    return left + right[2:]  # the right symbol always carries "##"


def train_wordpiece(
    texts: Iterable[str],
    vocab_size: int,
    do_lower_case: bool = True,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = WORDPIECE_SPECIAL_TOKENS,
    tokenize_chinese_chars: bool = True,
    strip_accents: Optional[bool] = None,
    max_input_chars_per_word: int = 100,
) -> Dict[str, int]:
    """Train a WordPiece vocabulary (token -> id) for :class:`~libai.tokenizer.BertTokenizer`.

    Ids: the special tokens first (``[PAD]`` = 0), then the characters seen (as word-initial
    ``c`` and word-internal ``##c``, most frequent first), then merged pieces. When there are
    more distinct characters than room, the rarest are left out and words using them encode as
    ``[UNK]``. Pass the same ``do_lower_case`` to ``BertTokenizer`` as here.
    """
    specials = list(dict.fromkeys(special_tokens))
    room = vocab_size - len(specials)
    if room < 1:
        raise ValueError(
            f"vocab_size={vocab_size} leaves no room beside {len(specials)} special tokens"
        )
    basic = BasicTokenizer(
        do_lower_case=do_lower_case,
        never_split=specials,
        tokenize_chinese_chars=tokenize_chinese_chars,
        strip_accents=strip_accents,
    )
    counts: Counter = Counter()
    for text in _without_specials(texts, specials):
        counts.update(basic.tokenize(text))
    word_counts: Counter = Counter()
    for word, count in counts.items():
        if word not in specials and len(word) <= max_input_chars_per_word:
            word_counts[(word[0],) + tuple("##" + char for char in word[1:])] += count
    symbol_counts: Counter = Counter()
    for symbols, count in word_counts.items():
        for symbol in symbols:
            symbol_counts[symbol] += count
    alphabet = sorted(symbol_counts, key=lambda s: (-symbol_counts[s], s))[:room]
    kept = set(alphabet)
    learnable = {w: c for w, c in word_counts.items() if all(s in kept for s in w)}
    vocab = {token: index for index, token in enumerate(specials + alphabet)}
    merges = learn_merges(learnable, vocab_size - len(vocab), join=_wordpiece_join,
                          min_frequency=min_frequency, known_symbols=vocab)
    for left, right in merges:
        vocab.setdefault(_wordpiece_join(left, right), len(vocab))
    return vocab


def train_vocab(
    corpus: str,
    output_dir: str,
    kind: str = "bpe",
    vocab_size: int = 8000,
    json_key: Optional[str] = None,
    min_frequency: int = 2,
    do_lower_case: bool = True,
) -> List[str]:
    """Train from a corpus file and write the vocabulary files; return their paths.

    ``kind="bpe"`` writes ``vocab.json`` + ``merges.txt`` (for ``GPT2Tokenizer``);
    ``kind="wordpiece"`` writes ``vocab.txt`` (for ``BertTokenizer``). See
    :func:`~libai.tokenizer.corpus.iter_corpus` for the corpus formats.
    """
    if kind not in ("bpe", "wordpiece"):
        raise ValueError(f"kind must be 'bpe' or 'wordpiece', got {kind!r}")
    texts = iter_corpus(corpus, json_key)
    if kind == "bpe":
        vocab, merges = train_bpe(texts, vocab_size, min_frequency=min_frequency)
        return [save_bpe_vocab(vocab, output_dir), save_merges(merges, output_dir)]
    vocab = train_wordpiece(
        texts, vocab_size, do_lower_case=do_lower_case, min_frequency=min_frequency
    )
    return [save_wordpiece_vocab(vocab, output_dir)]
