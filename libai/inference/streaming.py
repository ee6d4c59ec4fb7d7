"""Text as it is generated: a streamer for ``model.generate(..., streamer=...)``.

``generate`` hands a streamer the prompt once, then each step's new token (Hugging Face's
``put`` / ``end`` protocol). :class:`TextStreamer` turns those tokens into text and passes each
new piece of text to a callback (``print`` to a terminal, a list in a test), so a chat shows the
reply while it is being computed. It decodes the whole reply each time and emits what was added,
holding back text that ends in an incomplete UTF-8 character (byte-level and byte-fallback
tokenizers split characters over several tokens), and it ignores everything from the first stop
token on (the stop token itself is not shown).
"""
from typing import Any, Callable, Iterable, List, Optional

__all__ = ["TextStreamer"]

_INCOMPLETE = "\ufffd"


class TextStreamer:
    """Decode streamed tokens of one sequence and pass the new text to ``on_text``.

    Args:
        tokenizer: decodes the ids (``decode(ids, skip_special_tokens=...)``).
        on_text: called with each new piece of text (e.g. ``lambda s: print(s, end="", flush=True)``).
        stop_token_ids: ids that end the reply (the chat template's end-of-turn tokens).
        skip_prompt: the first ``put`` (the prompt) is not shown.
        skip_special_tokens: leave special tokens out of the text.
    """

    def __init__(self, tokenizer: Any, on_text: Optional[Callable[[str], Any]] = None, *,
                 stop_token_ids: Iterable[int] = (), skip_prompt: bool = True,
                 skip_special_tokens: bool = True) -> None:
        self.tokenizer = tokenizer
        self.on_text = on_text
        self.stop_token_ids = {int(i) for i in stop_token_ids}
        self.skip_prompt = skip_prompt
        self.skip_special_tokens = skip_special_tokens
        self.token_ids: List[int] = []
        self.stopped = False
        self._prompt_done = False
        self._shown = 0

    @property
    def text(self) -> str:
        """The reply's text so far (everything before the stop token)."""
        return self.tokenizer.decode(self.token_ids, skip_special_tokens=self.skip_special_tokens)

    def put(self, tokens: Any) -> None:
        """Take the prompt (first call) or one step's token; a batch of one sequence only."""
        values = tokens.tolist() if hasattr(tokens, "tolist") else list(tokens)
        rows = values if values and isinstance(values[0], list) else [values]
        if len(rows) != 1:
            raise ValueError(f"TextStreamer follows one sequence; generate() was given {len(rows)}")
        if not self._prompt_done:
            self._prompt_done = True
            if self.skip_prompt:
                return
        for token in rows[0]:
            if self.stopped:
                return
            if int(token) in self.stop_token_ids:
                self.stopped = True
                return
            self.token_ids.append(int(token))
        self._emit(final=False)

    def end(self) -> None:
        """Flush what is left (an incomplete character included)."""
        self._emit(final=True)

    def _emit(self, final: bool) -> None:
        text = self.text
        if not final and text.endswith(_INCOMPLETE):
            return
        new, self._shown = text[self._shown:], max(len(text), self._shown)
        if new and self.on_text is not None:
            self.on_text(new)
