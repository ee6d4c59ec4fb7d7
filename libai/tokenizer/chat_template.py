"""Chat templates: a conversation (``[{"role": ..., "content": ...}, ...]``) rendered to the
prompt text a chat model was trained on, by the Jinja2 template its tokenizer ships.

This is the one place libai renders chat templates. It reproduces the environment Hugging Face
renders them in, so the same template gives the same text here and in transformers:

- Jinja2's *immutable sandbox* (templates come from model repositories and are untrusted code),
  with ``trim_blocks`` and ``lstrip_blocks`` on and the ``loopcontrols`` extension
  (``{% break %}`` / ``{% continue %}``);
- ``tojson`` that does not HTML-escape (``json.dumps`` with ``ensure_ascii=False`` and its
  ``indent`` / ``separators`` / ``sort_keys`` options);
- the globals ``raise_exception(message)`` (how templates refuse a conversation),
  ``strftime_now(format)``, ``namespace`` and ``dict``; the ``{% generation %}`` block tag is
  accepted and renders its body;
- the variables ``messages``, ``add_generation_prompt``, ``tools``, ``documents`` and whatever
  else is passed (a tokenizer passes its special tokens: ``bos_token``, ``eos_token`` ...).

Messages' keys whose value is None are dropped first (templates test ``'key' in message``).
A template that raises becomes a :class:`ChatTemplateError` carrying the template's message.
"""
import json
from datetime import datetime
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional, Sequence

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["ChatTemplateError", "ChatTemplateMixin", "render_chat_template", "normalize_messages"]

Message = Mapping[str, Any]


class ChatTemplateError(ValueError):
    """The chat template refused the conversation (``raise_exception``) or could not render."""


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}`` marks assistant text in some templates; it
    renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser: Any) -> Any:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller: Any) -> str:
        return caller()


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value: Any, ensure_ascii: bool = False, indent: Optional[int] = None,
            separators: Any = None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class _Namespace(jinja2.utils.Namespace):
    """Jinja's ``namespace`` refusing underscore names (no way to reach Python internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 (Jinja's own signature trick)
        self, rest = args[0], args[1:]
        for name in dict(*rest, **kwargs):
            _Namespace._check(name)
        jinja2.utils.Namespace.__init__(self, *rest, **kwargs)

    def __setitem__(self, name: str, value: Any) -> None:
        _Namespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"chat templates cannot set underscore attributes on a namespace ({name!r})")


@lru_cache(maxsize=32)
def _compile(template: str) -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["namespace"] = _Namespace
    env.globals["dict"] = dict
    try:
        return env.from_string(template)
    except jinja2.exceptions.TemplateSyntaxError as error:
        raise ChatTemplateError(
            f"the chat template does not parse (line {error.lineno}: {error.message}); fix the "
            "template (tokenizer_config.json's chat_template or chat_template.jinja)") from None


def normalize_messages(messages: Sequence[Message]) -> List[Dict[str, Any]]:
    """Copies of the messages as plain dicts without the keys whose value is None; a clear
    error for anything that is not a list of dicts."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError("a chat is a list of messages like {'role': 'user', 'content': '...'}, "
                        f"got {type(messages).__name__}")
    out = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(f"message {index} is a {type(message).__name__}, not a dict with "
                            "'role' and 'content'")
        out.append({key: value for key, value in message.items() if value is not None})
    return out


def render_chat_template(template: str, messages: Sequence[Message], *,
                         add_generation_prompt: bool = False, **context: Any) -> str:
    """Render ``messages`` with the Jinja2 chat ``template`` as transformers does.

    Args:
        template: the template source (``chat_template`` of tokenizer_config.json).
        messages: the conversation, a list of ``{"role": ..., "content": ...}`` dicts.
        add_generation_prompt: end with the header that opens the assistant's reply (only
            templates that test this variable honour it).
        context: more template variables: the tokenizer's special tokens (``bos_token`` ...),
            ``tools``, ``documents``, or a template's own switches.

    Raises:
        ChatTemplateError: the template raised (``raise_exception('...')``: its message is
            kept) or failed to render.
    """
    if not isinstance(template, str) or not template:
        raise ChatTemplateError("no chat template: pass the template text (tokenizer_config.json's "
                                "'chat_template' or a chat_template.jinja file)")
    compiled = _compile(template)
    context.setdefault("tools", None)
    context.setdefault("documents", None)
    try:
        return compiled.render(messages=normalize_messages(messages),
                               add_generation_prompt=add_generation_prompt, **context)
    except jinja2.exceptions.TemplateError as error:
        raise ChatTemplateError(f"the chat template refused this conversation: {error.message or error}") from None


class ChatTemplateMixin:
    """``apply_chat_template`` for every libai tokenizer (the template is the tokenizer's
    ``chat_template``: a string, or a dict name -> template as tokenizer_config.json may hold)."""

    chat_template: Any = None

    def get_chat_template(self, chat_template: Optional[str] = None) -> str:
        """The template text: ``chat_template`` if given (a template or the name of one of the
        tokenizer's), else the tokenizer's own (its ``"default"`` one when it has several)."""
        own = self.chat_template
        if isinstance(own, dict):
            if chat_template in own:
                return own[chat_template]
            if chat_template is None:
                if "default" not in own:
                    raise ChatTemplateError(
                        f"this tokenizer has several chat templates ({sorted(own)}) and none is "
                        "'default'; pass chat_template=<one of those names>")
                return own["default"]
        if chat_template is not None:
            return chat_template
        if own is None:
            raise ChatTemplateError(
                f"{type(self).__name__} has no chat template: its directory has no 'chat_template' "
                "in tokenizer_config.json and no chat_template.jinja; pass chat_template='...'")
        return own

    def apply_chat_template(self, messages: Sequence[Message], *, add_generation_prompt: bool = False,
                            tokenize: bool = True, chat_template: Optional[str] = None,
                            return_dict: bool = False, **kwargs: Any) -> Any:
        """Render a conversation with the chat template; return its ids (``tokenize=True``) or
        its text. The template sees the special tokens (``bos_token``, ``eos_token`` ...) and
        ``kwargs``; the rendered text is encoded without adding special tokens, since the
        template writes them (as transformers does). ``return_dict=True`` gives
        ``{"input_ids", "attention_mask"}``. A list of conversations gives a list of results."""
        if isinstance(messages, (list, tuple)) and messages and isinstance(messages[0], (list, tuple)):
            return [self.apply_chat_template(conversation, add_generation_prompt=add_generation_prompt,
                                             tokenize=tokenize, chat_template=chat_template,
                                             return_dict=return_dict, **kwargs)
                    for conversation in messages]
        if isinstance(messages, (list, tuple)) and not messages:
            raise ChatTemplateError("the conversation is empty: give at least one message")
        template = self.get_chat_template(chat_template)
        context = {key: value for key, value in self.special_tokens_map.items()}
        context.update(kwargs)
        text = render_chat_template(template, messages, add_generation_prompt=add_generation_prompt,
                                    **context)
        if not tokenize:
            return text
        ids = list(self.encode(text, add_special_tokens=False))
        if return_dict:
            return {"input_ids": ids, "attention_mask": [1] * len(ids)}
        return ids
