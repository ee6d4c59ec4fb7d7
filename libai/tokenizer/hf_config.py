"""What a Hugging Face tokenizer directory says besides its vocabulary: the keys of
``tokenizer_config.json`` (and ``special_tokens_map.json``, ``chat_template.jinja``) turned into
libai tokenizer constructor arguments. Read by :class:`~libai.tokenizer.AutoTokenizer` and by the
``from_pretrained`` of :class:`~libai.tokenizer.JSONTokenizer` and
:class:`~libai.tokenizer.LlamaSentencePieceTokenizer`.
"""
import os
from typing import Any, Dict, List, Optional, Tuple

from libai.tokenizer.pretrained import (
    CHAT_TEMPLATE_FILE, SPECIAL_TOKENS_MAP_FILE, TOKENIZER_CONFIG_FILE, _read_json,
)

__all__ = ["tokenizer_arguments", "added_tokens"]

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
    """The constructor keywords libai reads from tokenizer_config.json / special_tokens_map.json,
    plus the whole tokenizer_config.json under ``"_config"`` (for class-specific keys)."""
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


def added_tokens(config: Dict[str, Any]) -> List[Tuple[int, Optional[str], bool]]:
    """``added_tokens_decoder`` as (id, token, special), by id."""
    decoder = config.get("added_tokens_decoder") or {}
    return sorted((int(i), _content(t), bool(isinstance(t, dict) and t.get("special")))
                  for i, t in decoder.items())
