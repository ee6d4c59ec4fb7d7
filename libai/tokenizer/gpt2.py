"""GPT-2's tokenizer: byte-level BPE over a ``vocab.json`` and a ``merges.txt``."""
from typing import Any, Dict, List, Optional, Sequence, Tuple

from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.byte_level import Pretokenizer, bytes_to_unicode, unicode_to_bytes
from libai.tokenizer.fast_backend import FastBackendMixin, byte_level_bpe_backend
from libai.tokenizer.vocab_files import (
    MERGES_TXT,
    VOCAB_JSON,
    load_bpe_vocab,
    load_merges,
    save_bpe_vocab,
    save_merges,
)

__all__ = ["GPT2Tokenizer", "apply_merges", "VOCAB_FILES_NAMES"]

EOD_TOKEN = "<|endoftext|>"
VOCAB_FILES_NAMES = {"vocab_file": VOCAB_JSON, "merges_file": MERGES_TXT}


def apply_merges(symbols: Sequence[str], ranks: Dict[Tuple[str, str], int]) -> List[str]:
    """Merge adjacent symbols, best-ranked pair first, until no listed pair remains.

    Each round finds the adjacent pair with the lowest rank and joins every occurrence of it,
    left to right. This is the order the merges were learned in, so it rebuilds the segments
    the vocabulary was trained to produce.
    """
    word = list(symbols)
    while len(word) > 1:
        best_rank, best = None, None
        for pair in zip(word, word[1:]):
            rank = ranks.get(pair)
            if rank is not None and (best_rank is None or rank < best_rank):
                best_rank, best = rank, pair
        if best is None:
            break
        left, right = best
        merged: List[str] = []
        index = 0
        while index < len(word):
            if index + 1 < len(word) and word[index] == left and word[index + 1] == right:
                merged.append(left + right)
                index += 2
            else:
                merged.append(word[index])
                index += 1
        word = merged
    return word


class GPT2Tokenizer(FastBackendMixin, BaseTokenizer):
    """Byte-level BPE tokenizer for GPT-style models.

    Text is cut into pre-tokens (:class:`~libai.tokenizer.byte_level.Pretokenizer`), each
    pre-token's UTF-8 bytes are written in the byte alphabet (a space shows as ``Ġ``), and
    merges join the bytes into vocabulary tokens. Because every byte is a token of its own,
    ``decode(encode(text)) == text`` for any text with no unknown token. ``encode`` runs
    through the ``tokenizers`` package when it gives the same ids
    (:mod:`libai.tokenizer.fast_backend`).

    Args:
        vocab_file: path of ``vocab.json`` (token -> id).
        merges_file: path of ``merges.txt`` (one merge per line, best first). Neither file yet?
            ``tools/train_vocab.py --type bpe`` trains both from a text corpus.
        errors: how bytes that are not valid UTF-8 decode (``"replace"`` gives U+FFFD); they
            only occur when decoding a slice of ids that cuts a character in half.
        unk_token, bos_token, eos_token: default ``<|endoftext|>``, the one special token of
            GPT-2; ``eod_id`` is ``eos_token``'s id.
        pad_token: ``<|endoftext|>`` by default so that batches can be padded; the attention
            mask tells padding from a real end of text.
        cache_size: pre-tokens whose BPE result is remembered (text repeats words a lot).
        **kwargs: ``cls_token``, ``sep_token``, ``mask_token``, ``additional_special_tokens``,
            ``add_bos_token`` (``encode`` prepends ``bos_token``), ``model_max_length``,
            ``padding_side`` (see :class:`BaseTokenizer`).
    """

    vocab_files_names = VOCAB_FILES_NAMES
    pretrained_vocab_files_map = {
        "vocab_file": {"gpt2": "https://huggingface.co/gpt2/resolve/main/vocab.json"},
        "merges_file": {"gpt2": "https://huggingface.co/gpt2/resolve/main/merges.txt"},
    }
    max_model_input_sizes = {"gpt2": 1024}
    default_eod_role = "eos"
    spaces_between_special_tokens = True  # the spaces around added tokens were dropped
    clean_up_tokenization_spaces = False  # decoding is exact; nothing to clean

    def __init__(
        self,
        vocab_file: str,
        merges_file: str,
        errors: str = "replace",
        unk_token: Optional[str] = EOD_TOKEN,
        bos_token: Optional[str] = EOD_TOKEN,
        eos_token: Optional[str] = EOD_TOKEN,
        pad_token: Optional[str] = EOD_TOKEN,
        cache_size: int = 50_000,
        **kwargs: Any,
    ) -> None:
        self.vocab_file = vocab_file
        self.merges_file = merges_file
        self._encoder: Dict[str, int] = load_bpe_vocab(vocab_file)
        self._decoder: List[str] = sorted(self._encoder, key=self._encoder.__getitem__)
        self._merges: List[Tuple[str, str]] = load_merges(merges_file)
        self._ranks: Dict[Tuple[str, str], int] = {}
        for rank, pair in enumerate(self._merges):
            self._ranks.setdefault(pair, rank)
        self.errors = errors
        self._byte_encoder = bytes_to_unicode()
        self._byte_decoder = unicode_to_bytes()
        self._pretokenizer = Pretokenizer()
        self._cache: Dict[str, Tuple[str, ...]] = {}
        self.cache_size = cache_size
        super().__init__(
            unk_token=unk_token,
            bos_token=bos_token,
            eos_token=eos_token,
            pad_token=pad_token,
            **kwargs,
        )

    # -- vocabulary ----------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Tokens in ``vocab.json`` (added tokens not counted; ``len()`` counts them)."""
        return len(self._encoder)

    def _base_vocab(self) -> Dict[str, int]:
        return self._encoder

    def _base_id(self, token: str) -> Optional[int]:
        return self._encoder.get(token)

    def _convert_id_to_token(self, index: int) -> str:
        return self._decoder[index]

    @property
    def encoder(self) -> Dict[str, int]:
        """The ``vocab.json`` contents, token -> id (a copy)."""
        return dict(self._encoder)

    @property
    def merges(self) -> List[Tuple[str, str]]:
        """The ``merges.txt`` pairs, best first (a copy)."""
        return list(self._merges)

    # -- tokenization --------------------------------------------------------------------------
    def bpe(self, pretoken: str) -> List[str]:
        """BPE tokens of one pre-token already written in the byte alphabet (cached)."""
        cached = self._cache.get(pretoken)
        if cached is None:
            cached = tuple(apply_merges(pretoken, self._ranks))
            if len(self._cache) >= self.cache_size:
                self._cache.clear()  # bounded: long runs over huge corpora stay flat
            self._cache[pretoken] = cached
        return list(cached)

    def clear_cache(self) -> None:
        """Forget remembered BPE results."""
        self._cache.clear()

    def _tokenize(self, text: str) -> List[str]:
        tokens: List[str] = []
        byte_encoder = self._byte_encoder
        for pretoken in self._pretokenizer(text):
            visible = "".join(byte_encoder[b] for b in pretoken.encode("utf-8"))
            tokens.extend(self.bpe(visible))
        return tokens

    def _build_fast_backend(self) -> Optional[object]:
        """The ``tokenizers`` route to the same ids, unless a subclass has its own BPE."""
        if type(self)._tokenize is not GPT2Tokenizer._tokenize or type(self).bpe is not GPT2Tokenizer.bpe:
            return None
        return byte_level_bpe_backend(self._encoder, self._merges)

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        """Map the byte-alphabet characters back to bytes and decode them as UTF-8.

        Added tokens stand for their own text. Decoding happens once over all bytes, so a
        character whose bytes span two tokens comes back whole.
        """
        data = bytearray()
        byte_decoder = self._byte_decoder
        for token in tokens:
            if self.is_added_token(token) or any(char not in byte_decoder for char in token):
                data.extend(token.encode("utf-8"))
            else:
                data.extend(byte_decoder[char] for char in token)
        return data.decode("utf-8", errors=self.errors)

    def build_inputs_with_special_tokens(
        self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None
    ) -> List[int]:
        """``bos A`` (``bos A bos B`` for a pair), LiBai's GPT-2 layout."""
        bos = [] if self.bos_token_id is None else [self.bos_token_id]
        ids = bos + list(token_ids_0)
        return ids if token_ids_1 is None else ids + bos + list(token_ids_1)

    def save_vocabulary(self, save_directory: str, filename_prefix: Optional[str] = None) -> Tuple[str, ...]:
        """Write ``vocab.json`` and ``merges.txt`` into ``save_directory`` (names prefixed
        ``PREFIX-`` with a prefix); return their paths."""
        prefix = f"{filename_prefix}-" if filename_prefix else ""
        return (save_bpe_vocab(self._encoder, save_directory, prefix + VOCAB_JSON),
                save_merges(self._merges, save_directory, prefix + MERGES_TXT))
