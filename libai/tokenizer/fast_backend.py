"""The ``tokenizers`` package as a faster route to the ids libai's own BPE and WordPiece compute.

libai's :class:`~libai.tokenizer.GPT2Tokenizer` (and RoBERTa's) and
:class:`~libai.tokenizer.BertTokenizer` run their algorithms in Python, which bounds how fast
``tools/preprocess_data.py`` turns a corpus into ids. The ``tokenizers`` package (Rust)
implements the same algorithms: built from the same files with the same normalization and
pre-tokenization it gives the same ids, faster (benchmarks/bench_tokenizer_speed.py measures
it; tests/tokenizer/test_fast_backend.py checks the ids on varied text). libai keeps cutting
added and special tokens out of the text itself (its rule drops the whitespace around them),
and hands only the text between them to the backend.

Whatever the backend could treat differently stays on the Python path: a byte-level vocabulary
lacking a byte symbol or the result of a merge (a hand-edited or truncated file); a BERT
tokenizer with ``never_split`` words, Chinese whole-word masking or no basic tokenization; a
subclass with its own algorithm; and text whose characters the two classify differently
(see ``_backend_takes``: beyond the Basic Multilingual Plane for GPT-2, non-ASCII for BERT).
"""
from typing import Dict, List, Optional, Sequence, Tuple

from libai.tokenizer.byte_level import bytes_to_unicode

__all__ = ["FastBackendMixin", "byte_level_bpe_backend", "wordpiece_backend"]

# The two sides classify characters with different Unicode tables (Python 3.10's unicodedata
# against the Rust crates'), so only text where they were checked to agree takes the backend:
# GPT-2's pre-tokenizer agrees on every character of the Basic Multilingual Plane; BERT's
# cleaning and punctuation rules disagree on some 60 marks and punctuation signs added since
# Unicode 10 and on unassigned code points (and ``tokenizers`` misses CJK Extension E), so BERT
# sends ASCII text only.
_LAST_BMP = "\uffff"


class FastBackendMixin:
    """``encode`` through a backend built on first use by ``_build_fast_backend`` (None: the
    Python path). Set ``use_fast_backend = False`` on a class or instance to force Python's."""

    use_fast_backend: bool = True

    def _build_fast_backend(self) -> Optional[object]:
        return None

    @staticmethod
    def _backend_takes(piece: str) -> bool:
        """Whether the backend gives the Python path's ids for ``piece``: for characters of
        the Basic Multilingual Plane (checked one by one for GPT-2's byte-level BPE)."""
        return max(piece) <= _LAST_BMP

    def _fast_backend(self) -> Optional[object]:
        if not self.use_fast_backend:
            return None
        if "_backend" not in self.__dict__:
            self._backend = self._build_fast_backend()
        return self._backend

    def _text_to_ids(self, text: str) -> List[int]:
        backend = self._fast_backend()
        if backend is None:
            return super()._text_to_ids(text)  # type: ignore[misc]
        ids: List[int] = []
        for piece, is_added in self._no_split.split(text):  # type: ignore[attr-defined]
            if is_added:
                ids.append(self._lookup(piece))  # type: ignore[attr-defined]
            elif piece and not self._backend_takes(piece):
                ids.extend(self.convert_tokens_to_ids(self._tokenize(piece)))  # type: ignore[attr-defined]
            else:
                ids.extend(_encode(backend, piece))
        return ids


def wordpiece_backend(vocab: Dict[str, int], unk_token: str, max_input_chars_per_word: int,
                      lowercase: bool, strip_accents: bool, chinese_chars: bool) -> Optional[object]:
    """A ``tokenizers.Tokenizer`` giving BERT's ids (NFC, BERT's cleaning, CJK splitting,
    lower-casing and accent stripping as asked, punctuation split, greedy WordPiece)."""
    try:
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    except ImportError:
        return None
    if unk_token not in vocab:
        return None
    backend = Tokenizer(models.WordPiece(vocab=dict(vocab), unk_token=unk_token,
                                         max_input_chars_per_word=max_input_chars_per_word))
    backend.normalizer = normalizers.Sequence([
        normalizers.NFC(),
        normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=chinese_chars,
                                   strip_accents=strip_accents, lowercase=lowercase)])
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return backend


def byte_level_bpe_backend(encoder: Dict[str, int], merges: Sequence[Tuple[str, str]]) -> Optional[object]:
    """A ``tokenizers.Tokenizer`` giving GPT-2's byte-level BPE ids for ``encoder``/``merges``,
    or None when the files are not ones it reproduces exactly (see the module docstring)."""
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers
    except ImportError:  # the package is a requirement; a stripped install falls back
        return None
    if any(symbol not in encoder for symbol in bytes_to_unicode().values()):
        return None
    if any(left + right not in encoder for left, right in merges):
        return None
    if len(set(merges)) != len(merges):
        return None
    try:
        model = models.BPE(vocab=dict(encoder), merges=[tuple(m) for m in merges], fuse_unk=False)
    except Exception:  # noqa: BLE001 (a file the Rust model refuses: keep the Python path)
        return None
    backend = Tokenizer(model)
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return backend


def _encode(backend: object, text: str) -> List[int]:
    """Ids of ``text``; ``encode_batch_fast`` skips the character offsets ``encode`` computes
    (a third faster, same ids) where the installed ``tokenizers`` has it."""
    fast = getattr(backend, "encode_batch_fast", None)
    if fast is not None:
        return fast([text], add_special_tokens=False)[0].ids
    return backend.encode(text, add_special_tokens=False).ids  # type: ignore[attr-defined]
