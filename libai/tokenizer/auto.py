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
"""
import json
import os
from typing import Any, Dict, List, Optional, Tuple, Type

from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.bert import BertTokenizer
from libai.tokenizer.gpt2 import GPT2Tokenizer
from libai.tokenizer.hf_json import TOKENIZER_FILE, JSONTokenizer
from libai.tokenizer.llama_sp import MODEL_FILE, LlamaSentencePieceTokenizer
from libai.tokenizer.pretrained import (
    CHAT_TEMPLATE_FILE, SPECIAL_TOKENS_MAP_FILE, TOKENIZER_CONFIG_FILE, _read_json,
)
from libai.tokenizer.roberta import RobertaTokenizer
from libai.tokenizer.t5 import T5Tokenizer

__all__ = ["AutoTokenizer", "VOCABULARY_FILES", "has_tokenizer_files"]

#: libai's own tokenizers, by the files they read (checked after tokenizer.json / .model).
VOCABULARY_FILES: Tuple[Tuple[Tuple[str, ...], Type[BaseTokenizer]], ...] = (
    (("vocab.txt",), BertTokenizer),
    (("vocab.json", "merges.txt"), GPT2Tokenizer),
    (("spiece.model",), T5Tokenizer),
)

_ROLES = ("bos_token", "eos_token", "unk_token", "pad_token", "cls_token", "sep_token", "mask_token")
#: Above this, tokenizer_config.json's model_max_length is transformers' "no limit" marker.
_NO_LIMIT = 10 ** 12


def _content(token: Any) -> Optional[str]:
    """A special token as tokenizer_config.json writes it: a string or an AddedToken dict."""
    if isinstance(token, dict):
        return token.get("content")
    return token


def _chat_template(config: Dict[str, Any], directory: str) -> Any:
    path = os.path.join(directory, CHAT_TEMPLATE_FILE)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    template = config.get("chat_template")
    if isinstance(template, list):  # [{"name": ..., "template": ...}, ...]
        return {entry["name"]: entry["template"] for entry in template}
    return template


def tokenizer_arguments(directory: str) -> Dict[str, Any]:
    """The constructor keywords libai reads from tokenizer_config.json / special_tokens_map.json."""
    config = _read_json(os.path.join(directory, TOKENIZER_CONFIG_FILE)) or {}
    special = _read_json(os.path.join(directory, SPECIAL_TOKENS_MAP_FILE)) or {}
    kwargs: Dict[str, Any] = {}
    for role in _ROLES:
        token = _content(config.get(role, special.get(role)))
        if token is not None:
            kwargs[role] = token
    extra = config.get("additional_special_tokens") or config.get("extra_special_tokens") \
        or special.get("additional_special_tokens")
    if isinstance(extra, list) and extra:
        kwargs["additional_special_tokens"] = [_content(t) for t in extra]
    length = config.get("model_max_length")
    if isinstance(length, int) and length < _NO_LIMIT:
        kwargs["model_max_length"] = length
    for key in ("padding_side", "clean_up_tokenization_spaces"):
        if key in config:
            kwargs[key] = config[key]
    template = _chat_template(config, directory)
    if template is not None:
        kwargs["chat_template"] = template
    kwargs["_config"] = config
    return kwargs


def _added_tokens(config: Dict[str, Any]) -> List[Tuple[int, str, bool]]:
    decoder = config.get("added_tokens_decoder") or {}
    return sorted((int(i), _content(t), bool(isinstance(t, dict) and t.get("special")))
                  for i, t in decoder.items())


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
        kwargs = tokenizer_arguments(directory)
        config = kwargs.pop("_config")
        if os.path.isfile(os.path.join(directory, TOKENIZER_FILE)):
            kwargs.update(overrides)
            return JSONTokenizer(os.path.join(directory, TOKENIZER_FILE), **kwargs)
        if os.path.isfile(os.path.join(directory, MODEL_FILE)):
            for key in ("add_bos_token", "add_eos_token", "legacy"):
                if key in config:
                    kwargs[key] = config[key]
            kwargs.update(overrides)
            tokenizer = LlamaSentencePieceTokenizer(os.path.join(directory, MODEL_FILE), **kwargs)
            for index, token, special in _added_tokens(config):
                if index >= len(tokenizer) and token is not None:
                    tokenizer.add_tokens([token], special_tokens=special)
            return tokenizer
        for files, tokenizer_class in VOCABULARY_FILES:
            if all(os.path.isfile(os.path.join(directory, name)) for name in files):
                if tokenizer_class is GPT2Tokenizer and _model_type(directory) == "roberta":
                    tokenizer_class = RobertaTokenizer
                return tokenizer_class.from_pretrained(directory, **overrides)
        looked_for = [TOKENIZER_FILE, MODEL_FILE] + [" + ".join(f) for f, _ in VOCABULARY_FILES]
        raise FileNotFoundError(
            f"no tokenizer in {directory}: looked for {', '.join(looked_for)}. Copy the model's "
            "tokenizer files (tokenizer.json or tokenizer.model, with tokenizer_config.json) into it")


def _model_type(directory: str) -> Optional[str]:
    path = os.path.join(directory, "config.json")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle).get("model_type")
