"""``AutoTokenizer.from_pretrained(dir)``: the right libai tokenizer for a model directory.

The directory's files decide, in this order:

1. ``tokenizer.json`` -> :class:`~libai.tokenizer.hf_json.JSONTokenizer` (the ``tokenizers``
   package; BPE, WordPiece or Unigram, byte-level or Metaspace);
2. ``tokenizer.model`` -> :class:`~libai.tokenizer.llama_sp.LlamaSentencePieceTokenizer`
   (SentencePiece, Llama-2's legacy spacing);
3. the vocabularies libai's own tokenizers read (``vocab.txt``: BERT; ``vocab.json`` +
   ``merges.txt``: GPT-2, or RoBERTa when config.json says so; ``spiece.model``: T5), which keep
   their ids.

``tokenizer_config.json`` (Hugging Face's keys) supplies the special tokens, padding side,
longest input and the chat template (``chat_template.jinja`` wins over it, as in transformers).

A model directory's ``config.json`` ``vocab_size`` (the rows of the model's embedding, often
more than the tokenizer's ids: Qwen2-7B has 152,064 rows for 151,646 ids, Phi-3-mini 32,064 for
32,011) becomes the tokenizer's ``padded_vocab_size``, so that a trainer sizing the model by its
tokenizer keeps the checkpoint's shape and its weights load.
"""
import json
import os
from typing import Any, Dict, Optional, Tuple, Type

from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.bert import BertTokenizer
from libai.tokenizer.gpt2 import GPT2Tokenizer
from libai.tokenizer.hf_json import TOKENIZER_FILE, JSONTokenizer
from libai.tokenizer.llama_sp import MODEL_FILE, LlamaSentencePieceTokenizer
from libai.tokenizer.roberta import RobertaTokenizer
from libai.tokenizer.t5 import T5Tokenizer

__all__ = ["AutoTokenizer", "VOCABULARY_FILES", "has_tokenizer_files"]

#: libai's own tokenizers, by the files they read (checked after tokenizer.json / .model).
VOCABULARY_FILES: Tuple[Tuple[Tuple[str, ...], Type[BaseTokenizer]], ...] = (
    (("vocab.txt",), BertTokenizer),
    (("vocab.json", "merges.txt"), GPT2Tokenizer),
    (("spiece.model",), T5Tokenizer),
)

def has_tokenizer_files(directory: str) -> bool:
    """Whether ``directory`` holds files :class:`AutoTokenizer` can read."""
    names = [(TOKENIZER_FILE,), (MODEL_FILE,)] + [files for files, _ in VOCABULARY_FILES]
    return any(all(os.path.isfile(os.path.join(directory, n)) for n in files) for files in names)


class AutoTokenizer:
    """``AutoTokenizer.from_pretrained(directory, **overrides)`` (see the module docstring)."""

    def __init__(self) -> None:
        raise TypeError("AutoTokenizer is not built directly; call AutoTokenizer.from_pretrained(directory)")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str, **overrides: Any) -> BaseTokenizer:
        """The tokenizer of a model directory; ``overrides`` replace constructor arguments
        (e.g. ``padding_side="left"``, ``pad_token="<|endoftext|>"``)."""
        directory = os.fspath(pretrained_model_name_or_path)
        if not os.path.isdir(directory):
            raise FileNotFoundError(
                f"{directory!r} is not a directory; AutoTokenizer.from_pretrained takes a local model "
                "or tokenizer directory (libai never downloads)")
        tokenizer = _load(directory, overrides)
        if tokenizer is not None:
            rows = _model_config(directory).get("vocab_size")
            if isinstance(rows, int) and not isinstance(rows, bool) and rows > len(tokenizer):
                tokenizer.padded_vocab_size = rows  # the checkpoint's embedding rows
            return tokenizer
        looked_for = [TOKENIZER_FILE, MODEL_FILE] + [" + ".join(f) for f, _ in VOCABULARY_FILES]
        raise FileNotFoundError(
            f"no tokenizer in {directory}: looked for {', '.join(looked_for)}. Copy the model's "
            "tokenizer files (tokenizer.json or tokenizer.model, with tokenizer_config.json) into it")


def _load(directory: str, overrides: Any) -> Optional[BaseTokenizer]:
    """The tokenizer of the first kind of files ``directory`` holds (None: no tokenizer files)."""
    if os.path.isfile(os.path.join(directory, TOKENIZER_FILE)):
        return JSONTokenizer.from_pretrained(directory, **overrides)
    if os.path.isfile(os.path.join(directory, MODEL_FILE)):
        return LlamaSentencePieceTokenizer.from_pretrained(directory, **overrides)
    for files, tokenizer_class in VOCABULARY_FILES:
        if all(os.path.isfile(os.path.join(directory, name)) for name in files):
            if tokenizer_class is GPT2Tokenizer and _model_config(directory).get("model_type") == "roberta":
                tokenizer_class = RobertaTokenizer
            return tokenizer_class.from_pretrained(directory, **overrides)
    return None


def _model_config(directory: str) -> Dict[str, Any]:
    """The directory's ``config.json`` (empty when there is none or it is not a JSON object)."""
    path = os.path.join(directory, "config.json")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    return config if isinstance(config, dict) else {}
