"""Chatting with a model: the chat template, the history, streaming and stop tokens.

A :class:`ChatSession` keeps the conversation (``[{"role", "content"}, ...]``), renders it with
the tokenizer's chat template (:meth:`~libai.tokenizer.base.BaseTokenizer.apply_chat_template`,
generation prompt on), generates the reply with the model's ``generate`` (greedy or sampled),
streams its text through a :class:`~libai.inference.streaming.TextStreamer`, stops at the
template's end-of-turn token(s) and appends the reply to the history. ``tools/chat.py`` and
``tools/generate.py --chat`` are command lines over it.

Stop tokens are the model directory's ``generation_config.json`` ``eos_token_id`` (an id or,
for chat models, a list such as ``[<|im_end|>, <|endoftext|>]``), then ``config.json``'s, then
the tokenizer's ``eos_token_id``.
"""
import json
import os
from typing import Any, Callable, Dict, List, Optional, Sequence

import oneflow as flow

from libai.inference.streaming import TextStreamer

__all__ = ["ChatSession", "stop_token_ids", "read_messages"]

Message = Dict[str, Any]


def _ids(value: Any) -> List[int]:
    if value is None:
        return []
    return [int(value)] if isinstance(value, int) else [int(v) for v in value]


def stop_token_ids(model_dir: Optional[str], tokenizer: Any = None) -> List[int]:
    """The ids that end a reply (see the module docstring), without repeats."""
    found: List[int] = []
    for name in ("generation_config.json", "config.json"):
        path = os.path.join(model_dir, name) if model_dir else None
        if path and os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                found += _ids(json.load(handle).get("eos_token_id"))
    if tokenizer is not None:
        found += _ids(getattr(tokenizer, "eos_token_id", None))
    return list(dict.fromkeys(found))


_directory_stops = stop_token_ids


def read_messages(path: str) -> List[Message]:
    """A conversation from a JSON file: a list of ``{"role", "content"}`` messages (or an
    object with such a list under ``"messages"``); errors name the file and the problem."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise SystemExit(f"--messages: no file {path}") from None
    except json.JSONDecodeError as error:
        raise SystemExit(f"--messages: {path} is not JSON (line {error.lineno}: {error.msg})") from None
    if isinstance(data, dict):
        data = data.get("messages")
    if not isinstance(data, list) or not all(isinstance(m, dict) and "role" in m for m in data):
        raise SystemExit(f"--messages: {path} must hold a list of messages like "
                         '[{"role": "user", "content": "..."}] (or {"messages": [...]})')
    return data


class ChatSession:
    """A conversation with a text-generation pipeline's model and tokenizer.

    Args:
        pipeline: a :class:`~libai.inference.TextGenerationPipeline` (its model and tokenizer).
        system: an optional system message starting the conversation.
        stop_token_ids: ids ending a reply (default: :func:`stop_token_ids` of the model
            directory and tokenizer).
        **generate_kwargs: ``generate``'s keywords (``max_new_tokens``, ``do_sample``,
            ``temperature``, ``generator`` ...).
    """

    def __init__(self, pipeline: Any, *, system: Optional[str] = None,
                 stop_token_ids: Optional[Sequence[int]] = None, **generate_kwargs: Any) -> None:
        if pipeline.tokenizer is None:
            raise ValueError("chatting needs a tokenizer: put tokenizer.json (or tokenizer.model) "
                             "and tokenizer_config.json with a chat_template in the model directory")
        self.pipeline = pipeline
        self.tokenizer = pipeline.tokenizer
        self.system = system
        if stop_token_ids is None:
            stop_token_ids = _directory_stops(pipeline.source.weights, self.tokenizer)
        self.stop_ids = list(stop_token_ids)
        self.generate_kwargs = generate_kwargs
        self.messages: List[Message] = []
        self.reset()

    def reset(self) -> None:
        """Forget the conversation (the system message stays)."""
        self.messages = [{"role": "system", "content": self.system}] if self.system else []

    def reply(self, on_text: Optional[Callable[[str], Any]] = None) -> str:
        """Generate the assistant's answer to the conversation as it stands, append it to the
        history and return its text (``on_text`` receives it piece by piece)."""
        prompt = self.tokenizer.apply_chat_template(self.messages, add_generation_prompt=True)
        streamer = TextStreamer(self.tokenizer, on_text, stop_token_ids=self.stop_ids)
        kwargs = dict(self.generate_kwargs)
        kwargs.setdefault("pad_token_id", self.pipeline.pad_token_id())
        self.pipeline.model.generate(
            flow.tensor([prompt], dtype=flow.int64),
            attention_mask=flow.ones(1, len(prompt), dtype=flow.int64),
            eos_token_id=self.stop_ids or None, streamer=streamer, **kwargs)
        text = streamer.text
        self.messages.append({"role": "assistant", "content": text})
        return text

    def send(self, text: str, on_text: Optional[Callable[[str], Any]] = None) -> str:
        """Add a user message and return the reply (see :meth:`reply`)."""
        self.messages.append({"role": "user", "content": text})
        try:
            return self.reply(on_text)
        except Exception:
            self.messages.pop()  # a refused turn leaves the history as it was
            raise
