"""Reading training text for the vocabulary trainers: plain text or JSON lines."""
import json
import os
from typing import Iterator, Optional

__all__ = ["iter_corpus"]


def iter_corpus(path: str, json_key: Optional[str] = None) -> Iterator[str]:
    """Yield the texts of a corpus file, one per non-empty line.

    Args:
        path: a UTF-8 text file. Without ``json_key`` every line is a text; with it every line
            is a JSON object and ``obj[json_key]`` is the text (the loose-JSON format of the
            LiBai/Megatron preprocessing tools).
        json_key: the key holding the text in each JSON line.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"corpus file not found: {path!r}")
    return _read(path, json_key)


def _read(path: str, json_key: Optional[str]) -> Iterator[str]:
    with open(path, encoding="utf-8") as handle:
        number = 0
        try:
            for number, line in enumerate(handle, start=1):
                text = line.rstrip("\r\n") if json_key is None else _json_text(line, json_key)
                if text and not text.isspace():
                    yield text
        except UnicodeDecodeError:
            raise ValueError(
                f"{path}: line {number + 1} is not UTF-8 text; convert the file to UTF-8"
            ) from None
        except ValueError as error:
            raise ValueError(f"{path}:{number}: {error}") from None


def _json_text(line: str, key: str) -> str:
    if not line.strip():
        return ""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"not valid JSON ({error.msg}); --json-key expects one JSON object per line"
        ) from None
    if not isinstance(record, dict) or key not in record:
        keys = sorted(record) if isinstance(record, dict) else type(record).__name__
        raise ValueError(f"no key {key!r} in this JSON line (it has {keys})")
    text = record[key]
    if not isinstance(text, str):
        raise ValueError(f"{key!r} holds a {type(text).__name__}, not a string")
    return text
