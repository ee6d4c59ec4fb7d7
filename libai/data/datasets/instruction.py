"""Instruction data: ``{"instruction": ..., "input": ..., "output": ...}`` through a prompt template.

The prompt is ``prompt_template`` filled with the record's instruction and input (or
``prompt_template_no_input`` when the input is missing or empty); the response is the output
followed by the tokenizer's EOS token, so the model learns where an answer ends. With
``use_chat_template=True`` the record becomes a two-turn conversation (an optional system
message, the user's instruction and input, the assistant's output) rendered by the tokenizer's
chat template instead, as :class:`~libai.data.datasets.chat.ChatDataset` does.
"""
from typing import Any, List, Optional

from libai.data.datasets.chat import chat_segments, template_renderer
from libai.data.datasets.sft import Segment, SFTDataset
from libai.data.datasets.sft_records import BadSample, Record

__all__ = ["InstructionDataset", "PROMPT_TEMPLATE", "PROMPT_TEMPLATE_NO_INPUT"]

#: The default prompt (the widely used Alpaca layout).
PROMPT_TEMPLATE = "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n"
PROMPT_TEMPLATE_NO_INPUT = "### Instruction:\n{instruction}\n\n### Response:\n"


class InstructionDataset(SFTDataset):
    """Instruction/response pairs, trained on the response.

    Args:
        source, tokenizer, max_seq_length, train_on_input, truncation, padding, name: see
            :class:`~libai.data.datasets.sft.SFTDataset`.
        instruction_key, input_key, output_key: the record's field names (``input_key`` may
            be None: no input field).
        prompt_template, prompt_template_no_input: ``str.format`` templates with
            ``{instruction}`` and ``{input}``.
        use_chat_template: render through the tokenizer's chat template instead.
        system_prompt: a system message for the chat template (ignored otherwise).
        add_bos: start with the tokenizer's BOS (None: when it has one; templated chats
            write their own).
        add_eos: end the response with the tokenizer's EOS.
    """

    def __init__(
        self,
        source: Any,
        tokenizer: Any,
        max_seq_length: int = 512,
        *,
        instruction_key: str = "instruction",
        input_key: Optional[str] = "input",
        output_key: str = "output",
        prompt_template: str = PROMPT_TEMPLATE,
        prompt_template_no_input: str = PROMPT_TEMPLATE_NO_INPUT,
        use_chat_template: bool = False,
        chat_template: Optional[str] = None,
        system_prompt: Optional[str] = None,
        add_bos: Optional[bool] = None,
        add_eos: bool = True,
        **options: Any,
    ) -> None:
        self.keys = (instruction_key, input_key, output_key)
        self.templates = (prompt_template, prompt_template_no_input)
        self.system_prompt = system_prompt
        self.render = template_renderer(tokenizer, chat_template) if use_chat_template else None
        bos = getattr(tokenizer, "bos_token_id", None)
        self.bos = [bos] if bos is not None and add_bos is not False else []
        eos = getattr(tokenizer, "eos_token_id", None)
        if add_eos and eos is None and not use_chat_template:
            raise ValueError(
                f"{type(tokenizer).__name__} has no eos_token_id, so a response cannot end with "
                "it: give the tokenizer an EOS token or pass add_eos=False"
            )
        self.eos = [eos] if add_eos and eos is not None else []
        super().__init__(source, tokenizer, max_seq_length, **options)

    def segments(self, record: Record) -> List[Segment]:
        instruction, extra, output = self._fields(record)
        if self.render is not None:
            user = instruction + ("\n\n" + extra if extra else "")
            messages = [{"role": "user", "content": user}, {"role": "assistant", "content": output}]
            if self.system_prompt:
                messages.insert(0, {"role": "system", "content": self.system_prompt})
            return chat_segments(self.render, messages, record.where)
        template = self.templates[0] if extra else self.templates[1]
        try:
            prompt = template.format(instruction=instruction, input=extra)
        except (KeyError, IndexError, ValueError) as err:
            raise BadSample(record.where, f"the prompt template does not format ({err!r})",
                            "use only {instruction} and {input} in it (double other braces)",
                            "template error") from None
        return [Segment(self.bos, False), Segment(prompt, False), Segment(output, True),
                Segment(self.eos, True)]

    def _fields(self, record: Record):
        instruction_key, input_key, output_key = self.keys
        values = []
        for key in (instruction_key, output_key):
            value = record.data.get(key)
            if not isinstance(value, str) or not value.strip():
                what = "no response" if key == output_key else "no instruction"
                raise BadSample(record.where, f"the sample's {key!r} is missing or empty (it has "
                                f"{sorted(record.data)})", f"give it a non-empty {key!r} string, "
                                "set the dataset's *_key to your field name, or remove the line",
                                what)
            values.append(value)
        extra = record.data.get(input_key) if input_key else None
        if extra is not None and not isinstance(extra, str):
            raise BadSample(record.where, f"the sample's {input_key!r} is a {type(extra).__name__}",
                            "make it a string (or leave it out)", "invalid")
        return values[0], extra or "", values[1]
