"""Chat data: ``{"messages": [{"role": ..., "content": ...}, ...]}`` rendered by a chat template.

The whole conversation is rendered once with the tokenizer's chat template (Jinja2, as in a
Hugging Face ``tokenizer_config.json``), and each assistant turn is located in it by rendering
the conversation up to that turn twice: with the generation prompt (what the model sees before
it answers) and with the turn itself. The text between is the response, template tokens that
end the turn included (the model learns to stop); everything else is prompt. A template that
renders an earlier turn differently once later turns follow (Qwen3 drops the reasoning block
of all but the last turn) has the turn taken as the whole renders it: its content right after
the generation prompt, and its end-of-turn text. A template whose renderings cannot be
matched so is named as the problem.
"""
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from libai.data.datasets.sft import Segment, SFTDataset, _common_prefix
from libai.data.datasets.sft_records import BadSample, Record

__all__ = ["ChatDataset", "chat_segments"]

Renderer = Callable[[List[Dict[str, str]], bool], str]


class ChatDataset(SFTDataset):
    """Conversations, trained on their assistant turns.

    Args:
        source, tokenizer, max_seq_length, train_on_input, truncation, padding, name: see
            :class:`~libai.data.datasets.sft.SFTDataset`. The tokenizer renders with
            ``apply_chat_template(messages, add_generation_prompt=..., tokenize=False,
            chat_template=...)``.
        messages_key: the field holding the list of messages.
        chat_template: a Jinja2 template used instead of the tokenizer's own.
        assistant_role: the role whose turns are responses.
    """

    def __init__(
        self,
        source: Any,
        tokenizer: Any,
        max_seq_length: int = 512,
        *,
        messages_key: str = "messages",
        chat_template: Optional[str] = None,
        assistant_role: str = "assistant",
        **options: Any,
    ) -> None:
        self.messages_key = messages_key
        self.assistant_role = assistant_role
        self.render = template_renderer(tokenizer, chat_template)
        super().__init__(source, tokenizer, max_seq_length, **options)

    def segments(self, record: Record) -> List[Segment]:
        if self.messages_key not in record.data:
            raise BadSample(record.where, f"the sample has no {self.messages_key!r} field (it has "
                            f"{sorted(record.data)})", f"give it a list of messages under "
                            f"{self.messages_key!r} or set messages_key", "missing field")
        return chat_segments(self.render, record.data[self.messages_key], record.where,
                             self.assistant_role)


def template_renderer(tokenizer: Any, chat_template: Optional[str] = None) -> Renderer:
    """``render(messages, add_generation_prompt) -> text`` with the tokenizer's chat template
    (or ``chat_template``)."""
    if hasattr(tokenizer, "apply_chat_template"):
        def render(messages: List[Dict[str, str]], add_generation_prompt: bool) -> str:
            return tokenizer.apply_chat_template(
                messages, add_generation_prompt=add_generation_prompt, tokenize=False,
                chat_template=chat_template,
            )
        return render
    if chat_template is None:
        raise ValueError(
            f"{type(tokenizer).__name__} has no chat template (no apply_chat_template): load the "
            "tokenizer with libai.tokenizer.AutoTokenizer.from_pretrained(dir) from a directory "
            "whose tokenizer_config.json has one, or pass chat_template='...'"
        )
    from libai.tokenizer.chat_template import render_chat_template

    context = {name: getattr(tokenizer, name, None) or "" for name in ("bos_token", "eos_token")}

    def render_with(messages: List[Dict[str, str]], add_generation_prompt: bool) -> str:
        return render_chat_template(chat_template, messages,
                                    add_generation_prompt=add_generation_prompt, **context)
    return render_with


def chat_segments(
    render: Renderer, messages: Any, where: str, assistant_role: str = "assistant"
) -> List[Segment]:
    """Split the rendered conversation into prompt and response segments (see the module
    docstring); every problem is a :class:`BadSample` naming ``where``."""
    messages = _checked_messages(messages, where)
    full = _render(render, messages, False, where)
    _check_all_rendered(full, messages, where)
    segments, done = [], 0
    for index, message in enumerate(messages):
        if message["role"] != assistant_role:
            continue
        if index == 0:
            raise BadSample(where, f"the conversation starts with an {assistant_role!r} turn, "
                            "so it has no prompt", "start it with a user (or system) message",
                            "no response")
        before = _render(render, messages[:index], True, where)
        through = _render(render, messages[: index + 1], False, where)
        # the turn ends where this rendering and the whole part (templates such as Phi-3's
        # append an end-of-conversation token that the whole has only at its very end)
        end = _common_prefix(through, full)
        if end <= len(before) and full.startswith(before):
            end = _turn_in_whole(full, len(before), through, message["content"])
        if not (full.startswith(before) and len(before) >= done and end > len(before)):
            raise BadSample(
                where, f"the chat template does not render the conversation up to message {index} "
                "as a prefix of the whole, so the assistant turn cannot be located",
                "use a template whose renderings of a growing conversation extend each other",
                "template error",
            )
        segments += [Segment(full[done:len(before)], False), Segment(full[len(before):end], True)]
        done = end
    if not any(segment.response and segment.content for segment in segments):
        raise BadSample(where, f"the conversation has no non-empty {assistant_role!r} turn",
                        f"add an {assistant_role!r} message with content (or remove the sample)",
                        "no response")
    return segments + [Segment(full[done:], False)]


def _turn_in_whole(full: str, start: int, through: str, content: str) -> int:
    """Where an assistant turn that the template renders differently once later turns follow
    ends in ``full``: Qwen3's template gives the turn after the last user message an (empty)
    ``<think></think>`` block and drops it from earlier turns, so the conversation cut after an
    earlier turn is not a prefix of the whole. The turn is then its content right after the
    generation prompt (at ``start``) followed by the end-of-turn text ``through`` puts after the
    content, as far as the whole has it; ``start`` when the whole does not read so."""
    for text in dict.fromkeys((content, content.strip())):
        if text and full.startswith(text, start) and text in through:
            after = through[through.rindex(text) + len(text):]
            return start + len(text) + _common_prefix(after, full[start + len(text):])
    return start


def _checked_messages(messages: Any, where: str) -> List[Dict[str, str]]:
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise BadSample(where, "'messages' must be a non-empty list of {role, content} objects",
                        "write the conversation as [{\"role\": \"user\", \"content\": ...}, ...]",
                        "bad messages")
    checked = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str) \
                or not isinstance(message.get("content"), str):
            raise BadSample(where, f"message {index} is not an object with string 'role' and "
                            f"'content' (got {message!r:.80})", "fix that message", "bad messages")
        checked.append(dict(message))
    return checked


def _render(render: Renderer, messages: List[Dict[str, str]], prompt: bool, where: str) -> str:
    try:
        return render(messages, prompt)
    except Exception as err:  # a template raises whatever its author wrote
        roles = sorted({m["role"] for m in messages})
        raise BadSample(
            where, f"the chat template raised {type(err).__name__}: {err} (roles {roles})",
            "use roles and an order the template accepts, or give another chat_template",
            "template error",
        ) from None


def _check_all_rendered(full: str, messages: List[Dict[str, str]], where: str) -> None:
    """A template that silently drops a role it does not know would train on a conversation
    the data does not hold: each message's content must appear in the rendering."""
    for index, message in enumerate(messages):
        if message["content"].strip() and message["content"].strip() not in full:
            raise BadSample(
                where, f"message {index} (role {message['role']!r}) does not appear in the "
                "rendered text: the chat template does not know that role",
                "use a role the template renders (system, user, assistant) or another template",
                "unknown role",
            )
