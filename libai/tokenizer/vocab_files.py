"""Reading and writing vocabulary files: WordPiece ``vocab.txt``, BPE ``vocab.json`` and
``merges.txt``.

The formats are the ones the public BERT and GPT-2 releases use, so their files load unchanged.
Every reader checks what it reads and names the file and line at fault: a vocabulary that is
silently wrong (a duplicated token, a gap in the ids) produces a model that trains on garbage.
"""
import json
import os
from typing import Dict, List, Mapping, Sequence, Tuple

__all__ = [
    "VOCAB_TXT",
    "VOCAB_JSON",
    "MERGES_TXT",
    "load_wordpiece_vocab",
    "save_wordpiece_vocab",
    "load_bpe_vocab",
    "save_bpe_vocab",
    "load_merges",
    "save_merges",
]

VOCAB_TXT = "vocab.txt"
VOCAB_JSON = "vocab.json"
MERGES_TXT = "merges.txt"
_MERGES_HEADER = "#version: 0.2"

_HOW_TO_MAKE = {
    "wordpiece": "--type wordpiece",
    "bpe": "--type bpe",
}


def _require_file(path: str, kind: str, what: str) -> None:
    """Raise a FileNotFoundError that says how to make the missing file."""
    if os.path.isfile(path):
        return
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"{what} {path!r} is a directory; pass the path of the file inside it"
        )
    raise FileNotFoundError(
        f"{what} not found: {path!r}. Point the tokenizer at an existing file, or train one "
        f"from a text corpus with:\n    python tools/train_vocab.py {_HOW_TO_MAKE[kind]} "
        f"--input corpus.txt --vocab-size 8000 --output-dir my_vocab\n(see docs/tokenizers.md)"
    )


def load_wordpiece_vocab(path: str) -> Dict[str, int]:
    """Read a ``vocab.txt``: one token per line, the line number (from 0) being its id."""
    _require_file(path, "wordpiece", "WordPiece vocabulary file")
    if path.endswith(".json"):
        raise ValueError(
            f"{path!r} looks like a BPE vocab.json; BertTokenizer needs a WordPiece vocab.txt "
            "(one token per line). Use GPT2Tokenizer for vocab.json + merges.txt."
        )
    vocab: Dict[str, int] = {}
    with open(path, encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            token = line.rstrip("\r\n")
            if token in vocab:
                raise ValueError(
                    f"{path}:{index + 1}: token {token!r} already appeared on line "
                    f"{vocab[token] + 1}; every line of a vocab.txt must be a distinct token"
                )
            vocab[token] = index
    if not vocab:
        raise ValueError(f"WordPiece vocabulary file {path!r} is empty")
    return vocab


def _tokens_by_id(vocab: Mapping[str, int]) -> List[str]:
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    return [token for token, _ in ordered]


def save_wordpiece_vocab(vocab: Mapping[str, int], directory: str, filename: str = VOCAB_TXT) -> str:
    """Write ``vocab`` (ids 0..n-1) as ``directory/vocab.txt``, one token per line in id order,
    each line ending in ``\\n``; return the file path."""
    for token in vocab:
        if "\n" in token or "\r" in token:
            raise ValueError(
                f"token {token!r} contains a line break and cannot be stored in vocab.txt"
            )
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, filename)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for token in _tokens_by_id(vocab):
            handle.write(token + "\n")
    return path


def load_bpe_vocab(path: str) -> Dict[str, int]:
    """Read a ``vocab.json`` mapping token -> id, checking the ids are exactly 0..n-1."""
    _require_file(path, "bpe", "BPE vocabulary file (vocab.json)")
    try:
        with open(path, encoding="utf-8") as handle:
            vocab = json.load(handle)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{path!r} is not valid JSON ({error}); a vocab.json maps token -> id"
        ) from None
    if not isinstance(vocab, dict) or not vocab:
        raise ValueError(f"{path!r} must hold a non-empty JSON object mapping token -> id")
    bad = [(t, i) for t, i in vocab.items() if not isinstance(i, int) or isinstance(i, bool)]
    if bad:
        raise ValueError(f"{path!r}: ids must be integers, but {bad[0][0]!r} maps to {bad[0][1]!r}")
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise ValueError(
            f"{path!r}: ids must be exactly 0..{len(vocab) - 1} with no gaps or repeats "
            f"(found {len(set(vocab.values()))} distinct ids from {min(vocab.values())} to "
            f"{max(vocab.values())})"
        )
    return vocab


def save_bpe_vocab(vocab: Mapping[str, int], directory: str, filename: str = VOCAB_JSON) -> str:
    """Write ``vocab`` as ``directory/vocab.json``: a JSON object in id order, one
    ``"token": id`` per line, non-ASCII characters written as themselves, a final newline.
    Return the file path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, filename)
    ordered = {token: vocab[token] for token in _tokens_by_id(vocab)}
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        json.dump(ordered, handle, ensure_ascii=False, indent=0)
        handle.write("\n")
    return path


def load_merges(path: str) -> List[Tuple[str, str]]:
    """Read a ``merges.txt``: one ``left right`` pair per line, highest priority first."""
    _require_file(path, "bpe", "BPE merges file (merges.txt)")
    merges: List[Tuple[str, str]] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line or (number == 1 and line.startswith("#version")):
                continue
            parts = line.split(" ")
            if len(parts) != 2 or not parts[0] or not parts[1]:
                raise ValueError(
                    f"{path}:{number}: expected two space-separated symbols ('left right'), "
                    f"got {line!r}"
                )
            merges.append((parts[0], parts[1]))
    return merges


def save_merges(merges: Sequence[Tuple[str, str]], directory: str, filename: str = MERGES_TXT) -> str:
    """Write ``merges`` as ``directory/merges.txt``: the ``#version: 0.2`` header, then one
    ``left right`` pair per line, best first, each line ending in ``\\n``."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, filename)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(_MERGES_HEADER + "\n")
        for left, right in merges:
            handle.write(f"{left} {right}\n")
    return path
