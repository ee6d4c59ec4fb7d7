"""The ``tokenizers`` package as a faster route to the ids libai's own GPT-2 BPE computes.

libai's :class:`~libai.tokenizer.GPT2Tokenizer` (and RoBERTa's) runs byte-level BPE in Python,
which bounds how fast ``tools/preprocess_data.py`` turns a corpus into ids. The ``tokenizers``
package (Rust) implements the same algorithm: built from the same ``vocab.json`` and
``merges.txt`` with GPT-2's byte-level pre-tokenizer it gives the same ids, many times faster
(benchmarks/bench_tokenizer_speed.py measures it; tests/tokenizer/test_fast_backend.py checks
the ids on varied text). libai keeps cutting added and special tokens out of the text itself
(its rule drops the whitespace around them), and hands only the text between them to the
backend.

A vocabulary the backend could treat differently is left to the Python path: one lacking a
byte symbol or the result of a merge (a hand-edited or truncated file).
"""
from typing import Dict, List, Optional, Sequence, Tuple

from libai.tokenizer.byte_level import bytes_to_unicode

__all__ = ["byte_level_bpe_backend"]


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


def backend_ids(backend: object, pieces: List[Tuple[str, bool]], lookup) -> List[int]:
    """Ids of text cut into (piece, is_added_token) runs: added tokens by ``lookup``, the rest
    by the backend in one batch call."""
    plain = [piece for piece, is_added in pieces if not is_added]
    encoded = iter(backend.encode_batch(plain, add_special_tokens=False)) if len(plain) > 1 else \
        iter([backend.encode(plain[0], add_special_tokens=False)] if plain else [])
    ids: List[int] = []
    for piece, is_added in pieces:
        if is_added:
            ids.append(lookup(piece))
        else:
            ids.extend(next(encoded).ids)
    return ids
