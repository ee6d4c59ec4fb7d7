"""Text to model inputs and back: ``encode``, ``batch_encode``, ``decode`` and their options.

:class:`EncodingMixin` is the half of :class:`~libai.tokenizer.base.BaseTokenizer` that a data
pipeline calls. It adds special tokens, truncates, pads and converts to tensors on top of what
the base class answers (``tokenize``, ``convert_tokens_to_ids``, ``convert_ids_to_tokens``,
``build_inputs_with_special_tokens``, ``pad_token_id``, the added-token set), so these options
mean the same for every tokenizer.
"""
from typing import Any, Dict, List, Optional, Sequence, Union

from libai.tokenizer.decoding import clean_up_tokenization
from libai.tokenizer.padding import PaddingArg, pad_batch, pad_to_length
from libai.tokenizer.tensors import convert_to_tensors

__all__ = ["EncodingMixin"]

_PADDING_CHOICES = "padding must be True, False, 'longest' or 'max_length', got "


class EncodingMixin:
    """``encode`` / ``batch_encode`` / ``decode`` for a :class:`~libai.tokenizer.base.BaseTokenizer`.

    Class attributes read by :meth:`decode` (a tokenizer class sets its own):
    ``spaces_between_special_tokens`` and ``clean_up_tokenization_spaces``.
    """

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        """How many ids wrapping adds around one sequence (or a pair)."""
        return len(self._wrap([], [] if pair else None))

    def encode(
        self,
        text: Union[str, Sequence[str], Sequence[int]],
        add_special_tokens: Optional[bool] = None,
        max_length: Optional[int] = None,
        truncation: bool = False,
        padding: PaddingArg = False,
        return_tensors: Optional[str] = None,
        is_global: bool = False,
        device: Optional[str] = None,
        **kwargs: Any,
    ) -> Any:
        """Text -> ids.

        Args:
            text: a str; a list of str (encoded one by one, a list of id lists comes back);
                or a list of ids, returned unchanged (as LiBai does).
            add_special_tokens: wrap the ids as the model expects (BERT: ``[CLS] ... [SEP]``).
                None follows the tokenizer's ``add_bos_token`` (False unless built with True).
            max_length: the length that ``truncation`` cuts to and ``padding`` fills to.
            truncation: cut the text's ids so that the result, special tokens included, has at
                most ``max_length`` ids (``model_max_length`` when ``max_length`` is None).
            padding: ``True`` or ``"max_length"`` appends ``pad_id`` up to ``max_length``
                (on ``padding_side``); ``False`` or ``"longest"`` leaves a single text as is.
            return_tensors, is_global, device, kwargs: None gives lists, ``"np"`` a numpy array,
                ``"of"`` a OneFlow tensor (see :func:`~libai.tokenizer.tensors.convert_to_tensors`).
        """
        if isinstance(text, (list, tuple)) and text and all(isinstance(t, int) for t in text):
            return text
        if isinstance(text, (list, tuple)) and text and all(isinstance(t, str) for t in text):
            ids: Any = [self._encode_one(t, add_special_tokens, max_length, truncation, padding)
                        for t in text]
        elif isinstance(text, str):
            ids = self._encode_one(text, add_special_tokens, max_length, truncation, padding)
        else:
            raise ValueError("encode() takes a str, a list of str or a list of int ids, "
                             f"got {type(text).__name__}")
        return convert_to_tensors(ids, return_tensors, is_global, device, **kwargs)

    def _encode_one(self, text: str, add_special_tokens: Optional[bool], max_length: Optional[int],
                    truncation: bool, padding: PaddingArg) -> List[int]:
        ids = self._encode_unpadded(text, add_special_tokens, max_length, truncation)
        if padding in (True, "max_length"):
            ids, _ = pad_to_length(ids, self._require_length(max_length, "padding"),
                                   self._require_pad_id(), self.padding_side)
        elif padding not in (False, "longest", "do_not_pad"):
            raise ValueError(_PADDING_CHOICES + repr(padding))
        return ids

    def batch_encode(
        self,
        texts: Sequence[str],
        add_special_tokens: Optional[bool] = None,
        max_length: Optional[int] = None,
        truncation: bool = False,
        padding: PaddingArg = True,
    ) -> Dict[str, List[List[int]]]:
        """Encode several texts to equal-length rows.

        Returns ``{"input_ids": rows, "attention_mask": rows}``, the mask holding 1 for real
        tokens and 0 for padding. ``padding=True``/``"longest"`` pads to the longest text,
        ``"max_length"`` to ``max_length``, ``False`` not at all (masks are then all ones).
        """
        if isinstance(texts, str):
            raise TypeError("batch_encode() takes a list of texts; use encode() for a single str")
        rows = [self._encode_unpadded(t, add_special_tokens, max_length, truncation) for t in texts]
        if padding in (False, "do_not_pad"):
            return {"input_ids": rows, "attention_mask": [[1] * len(r) for r in rows]}
        if padding in (True, "longest"):
            length = max((len(r) for r in rows), default=0)
        elif padding == "max_length":
            length = self._require_length(max_length, "padding='max_length'")
        else:
            raise ValueError(_PADDING_CHOICES + repr(padding))
        ids, mask = pad_batch(rows, length, self._require_pad_id(), self.padding_side)
        return {"input_ids": ids, "attention_mask": mask}

    def _encode_unpadded(self, text: str, add_special_tokens: Optional[bool],
                         max_length: Optional[int], truncation: bool) -> List[int]:
        wrap = self.add_bos_token if add_special_tokens is None else add_special_tokens
        ids = self._text_to_ids(text)
        if truncation:
            limit = self._require_length(max_length, "truncation")
            reserved = self.num_special_tokens_to_add() if wrap else 0
            if limit < reserved:
                raise ValueError(
                    f"max_length={limit} leaves no room: {reserved} special tokens are added; "
                    f"use max_length >= {reserved} or add_special_tokens=False"
                )
            ids = ids[: limit - reserved]
        return self._wrap(ids) if wrap else ids

    def _text_to_ids(self, text: str) -> List[int]:
        """The ids of ``text`` without special tokens; a tokenizer with a faster route to the
        same ids (:mod:`libai.tokenizer.fast_backend`) overrides this."""
        return self.convert_tokens_to_ids(self.tokenize(text))

    def _wrap(self, ids: List[int], pair_ids: Optional[List[int]] = None) -> List[int]:
        """Add the special tokens whatever ``add_bos_token`` says (subclasses that consult the
        flag inside ``build_inputs_with_special_tokens``, as LiBai's do, see it set here)."""
        saved, self.add_bos_token = self.add_bos_token, True
        try:
            return self.build_inputs_with_special_tokens(ids, pair_ids)
        finally:
            self.add_bos_token = saved

    def _require_length(self, max_length: Optional[int], what: str) -> int:
        length = max_length if max_length is not None else self.model_max_length
        if length is None:
            raise ValueError(f"{what} needs max_length (or a tokenizer built with model_max_length=...)")
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise ValueError(f"max_length must be a non-negative int, got {length!r}")
        return length

    def convert_to_tensors(
        self,
        token_ids: Any,
        return_tensors: Optional[str] = None,
        is_global: bool = False,
        device: Optional[str] = None,
        **kwargs: Any,
    ) -> Any:
        """LiBai's method name for :func:`~libai.tokenizer.tensors.convert_to_tensors` (a
        tokenizer subclass written for LiBai calls it from its own ``encode``). ``device``
        defaults to the machine's (LiBai's default is ``"cuda"``)."""
        return convert_to_tensors(token_ids, return_tensors, is_global, device, **kwargs)

    def _require_pad_id(self) -> int:
        pad = self.pad_token_id
        if pad is None:
            raise ValueError(
                f"{type(self).__name__} has no pad token, so it cannot pad; build it with "
                "pad_token=... (for GPT-2 the usual choice is '<|endoftext|>')"
            )
        return pad

    def decode(
        self,
        token_ids: Any,
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: Optional[bool] = None,
        spaces_between_special_tokens: Optional[bool] = None,
    ) -> str:
        """Ids -> text. Accepts a list, a tuple, or a 1-D numpy/OneFlow integer array.

        Runs of ordinary tokens are joined by :meth:`convert_tokens_to_string`; added and
        special tokens stand for their own text. The two switches default to the class's
        attributes of the same name: ``spaces_between_special_tokens`` puts a space around
        added tokens (for tokenizers whose tokens do not carry spaces), and
        ``clean_up_tokenization_spaces`` removes spaces before punctuation (``"a , b"`` ->
        ``"a, b"``), for BERT, whose tokens lost the original spacing anyway.
        """
        tokens = self.convert_ids_to_tokens(_as_id_list(token_ids), skip_special_tokens)
        parts: List[str] = []
        run: List[str] = []
        for token in tokens:
            if token in self._no_split:
                if run:
                    parts.append(self.convert_tokens_to_string(run))
                    run = []
                parts.append(token)
            else:
                run.append(token)
        if run:
            parts.append(self.convert_tokens_to_string(run))
        spaced = (self.spaces_between_special_tokens if spaces_between_special_tokens is None
                  else spaces_between_special_tokens)
        text = (" " if spaced else "").join(part for part in parts if part or not spaced)
        clean = (self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None
                 else clean_up_tokenization_spaces)
        return clean_up_tokenization(text) if clean else text

    clean_up_tokenization = staticmethod(clean_up_tokenization)


def _as_id_list(ids: Any) -> List[int]:
    """Accept lists, tuples and array-likes with ``tolist()``; insist on one dimension."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, int):
        return [ids]
    ids = list(ids)
    if any(isinstance(i, (list, tuple)) for i in ids):
        raise ValueError("decode() takes one sequence of ids; decode a batch row by row")
    return ids

