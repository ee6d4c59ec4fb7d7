"""What every libai tokenizer offers, whatever its algorithm.

A tokenizer turns text into ids in three layers, and this base class owns the outer two:

1. *added tokens* (special tokens such as ``[CLS]`` or ``<|endoftext|>``, and any token added
   with :meth:`BaseTokenizer.add_tokens`) are cut out of the text first, so they are never split;
2. the pieces in between go to the subclass's algorithm (:meth:`BaseTokenizer._tokenize`);
3. ids are then wrapped with special tokens, truncated and padded as asked.

Subclasses (:class:`~libai.tokenizer.BertTokenizer`, :class:`~libai.tokenizer.GPT2Tokenizer`)
provide the base vocabulary and the algorithm; everything a data pipeline calls (``encode``,
``decode``, ``batch_encode``, ``vocab_size``, ``eod_id``, ``pad_id``...) is defined once here so
that it means the same for both.
"""
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

from libai.tokenizer.padding import PaddingArg, check_padding_side, pad_batch, pad_to_length

__all__ = ["BaseTokenizer"]

_PADDING_CHOICES = "padding must be True, False, 'longest' or 'max_length', got "

# The named special-token roles, in the order their keyword arguments are accepted.
SPECIAL_ROLES = ("unk", "pad", "cls", "sep", "mask", "bos", "eos")


def _token_property(role: str) -> property:
    return property(
        lambda self: self._special_tokens.get(role),
        doc=f"The {role} token as a string, or None when this tokenizer has none.",
    )


def _id_property(role: str) -> property:
    return property(
        lambda self: self._special_id(role),
        doc=f"The id of the {role} token, or None when this tokenizer has none.",
    )


class BaseTokenizer:
    """Shared machinery: special and added tokens, id conversion, encode/decode, padding.

    Args:
        unk_token, pad_token, cls_token, sep_token, mask_token, bos_token, eos_token: the
            special token for each role, or None for none. A special token missing from the
            vocabulary file is appended to it (it gets the next free id).
        additional_special_tokens: more special tokens (e.g. ``<extra_id_0>`` sentinels), also
            appended when missing and never split.
        model_max_length: default ``max_length`` for ``truncation=True``.
        padding_side: ``"right"`` (default) or ``"left"`` (handy for generation).
    """

    def __init__(
        self,
        unk_token: Optional[str] = None,
        pad_token: Optional[str] = None,
        cls_token: Optional[str] = None,
        sep_token: Optional[str] = None,
        mask_token: Optional[str] = None,
        bos_token: Optional[str] = None,
        eos_token: Optional[str] = None,
        additional_special_tokens: Sequence[str] = (),
        model_max_length: Optional[int] = None,
        padding_side: str = "right",
    ) -> None:
        given = dict(zip(SPECIAL_ROLES, (unk_token, pad_token, cls_token, sep_token,
                                         mask_token, bos_token, eos_token)))
        for role, token in given.items():
            if token is not None and (not isinstance(token, str) or not token):
                raise TypeError(f"{role}_token must be a non-empty string or None, got {token!r}")
        self._special_tokens: Dict[str, str] = {r: t for r, t in given.items() if t is not None}
        self._added_tokens: Dict[str, int] = {}
        self._added_by_id: Dict[int, str] = {}
        self._special_set: Set[str] = set()
        self._no_split: Set[str] = set()
        self._split_regex: Optional["re.Pattern[str]"] = None
        self._padded_vocab_size: Optional[int] = None
        self.model_max_length = model_max_length
        self.padding_side = check_padding_side(padding_side)
        extra = list(additional_special_tokens or ())
        self.add_tokens(list(self._special_tokens.values()) + extra, special=True)
        self.additional_special_tokens: List[str] = extra

    # ----------------------------------------------------------------------------------------
    # What a subclass provides
    # ----------------------------------------------------------------------------------------
    def _tokenize(self, text: str) -> List[str]:
        """Split text that holds no added token into model tokens."""
        raise NotImplementedError

    def _base_vocab(self) -> Dict[str, int]:
        """The vocabulary read from the files, token -> id, ids 0..n-1."""
        raise NotImplementedError

    def _base_token(self, index: int) -> str:
        """The base-vocabulary token whose id is ``index`` (0 <= index < base size)."""
        raise NotImplementedError

    def _base_id(self, token: str) -> Optional[int]:
        """The id of ``token`` in the base vocabulary, or None."""
        return self._base_vocab().get(token)

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        """Join tokens back into text (the inverse of :meth:`tokenize` where possible)."""
        raise NotImplementedError

    def build_inputs_with_special_tokens(self, ids: List[int]) -> List[int]:
        """Wrap one sequence's ids with the model's special tokens; default: unchanged."""
        return list(ids)

    @property
    def eod_token(self) -> Optional[str]:
        """The token that ends a document in a token stream (``append_eod``)."""
        return self._special_tokens.get("eos")

    # ----------------------------------------------------------------------------------------
    # Vocabulary
    # ----------------------------------------------------------------------------------------
    @property
    def base_vocab_size(self) -> int:
        """Number of tokens in the vocabulary files, without added tokens."""
        return len(self._base_vocab())

    @property
    def vocab_size(self) -> int:
        """Number of distinct ids, added tokens included: every id is below this."""
        return self.base_vocab_size + len(self._added_by_id)

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def padded_vocab_size(self) -> int:
        """Embedding rows a model should allocate: ``vocab_size`` unless :func:`build_tokenizer`
        rounded it up (to a multiple that splits evenly across tensor-parallel ranks)."""
        if self._padded_vocab_size is None:
            return self.vocab_size
        return max(self._padded_vocab_size, self.vocab_size)

    @padded_vocab_size.setter
    def padded_vocab_size(self, value: int) -> None:
        if not isinstance(value, int) or value < self.vocab_size:
            raise ValueError(
                f"padded_vocab_size must be an int >= vocab_size ({self.vocab_size}), got {value!r}"
            )
        self._padded_vocab_size = value

    def get_vocab(self) -> Dict[str, int]:
        """Every token -> id, added tokens included."""
        vocab = dict(self._base_vocab())
        vocab.update(self._added_tokens)
        return vocab

    def add_tokens(self, tokens: Iterable[str], special: bool = False) -> int:
        """Register tokens that are never split; give new ids to those not yet in the vocabulary.

        Returns how many new ids were created. ``special=True`` marks them as special tokens,
        which ``decode(..., skip_special_tokens=True)`` leaves out.
        """
        created = 0
        for token in tokens:
            if not isinstance(token, str) or not token:
                raise TypeError(f"added tokens must be non-empty strings, got {token!r}")
            if self._base_id(token) is None and token not in self._added_tokens:
                new_id = self.vocab_size
                self._added_tokens[token] = new_id
                self._added_by_id[new_id] = token
                created += 1
            self._no_split.add(token)
            if special:
                self._special_set.add(token)
        self._split_regex = None
        return created

    def is_added_token(self, token: str) -> bool:
        """True for special tokens and tokens registered with :meth:`add_tokens`."""
        return token in self._no_split

    # ----------------------------------------------------------------------------------------
    # Special tokens
    # ----------------------------------------------------------------------------------------
    unk_token = _token_property("unk")
    pad_token = _token_property("pad")
    cls_token = _token_property("cls")
    sep_token = _token_property("sep")
    mask_token = _token_property("mask")
    bos_token = _token_property("bos")
    eos_token = _token_property("eos")
    unk_id = unk_token_id = _id_property("unk")
    pad_id = pad_token_id = _id_property("pad")
    cls_id = cls_token_id = _id_property("cls")
    sep_id = sep_token_id = _id_property("sep")
    mask_id = mask_token_id = _id_property("mask")
    bos_id = bos_token_id = _id_property("bos")
    eos_id = eos_token_id = _id_property("eos")

    @property
    def eod_id(self) -> Optional[int]:
        """Id of :attr:`eod_token`: what a text pipeline appends after each document."""
        token = self.eod_token
        return None if token is None else self._token_to_id(token)

    @property
    def eod(self) -> Optional[int]:
        """Same as :attr:`eod_id` (the Megatron spelling)."""
        return self.eod_id

    def _special_id(self, role: str) -> Optional[int]:
        token = self._special_tokens.get(role)
        return None if token is None else self._token_to_id(token)

    @property
    def special_tokens_map(self) -> Dict[str, str]:
        """Role -> token for every special token role this tokenizer has."""
        return {f"{role}_token": token for role, token in self._special_tokens.items()}

    @property
    def all_special_tokens(self) -> List[str]:
        """Every special token (named roles and additional ones), sorted by id."""
        return sorted(self._special_set, key=self._token_to_id)

    @property
    def all_special_ids(self) -> List[int]:
        """Ids of :attr:`all_special_tokens`."""
        return [self._token_to_id(token) for token in self.all_special_tokens]

    # ----------------------------------------------------------------------------------------
    # Tokens <-> ids
    # ----------------------------------------------------------------------------------------
    def _token_to_id(self, token: str) -> Optional[int]:
        if token in self._added_tokens:
            return self._added_tokens[token]
        return self._base_id(token)

    def _id_to_token(self, index: int) -> str:
        if isinstance(index, bool) or not isinstance(index, int):
            try:
                index = int(index)  # numpy and oneflow integer scalars
            except (TypeError, ValueError):
                raise TypeError(f"token ids must be integers, got {index!r}") from None
        if 0 <= index < self.base_vocab_size:
            return self._base_token(index)
        if index in self._added_by_id:
            return self._added_by_id[index]
        raise IndexError(
            f"token id {index} is outside the vocabulary (ids 0..{self.vocab_size - 1})"
        )

    def convert_tokens_to_ids(self, tokens: Union[str, Sequence[str]]) -> Union[int, List[int]]:
        """Map a token (or a list of tokens) to its id; unknown tokens map to ``unk_id``."""
        if isinstance(tokens, str):
            return self._lookup(tokens)
        return [self._lookup(token) for token in tokens]

    def _lookup(self, token: str) -> int:
        index = self._token_to_id(token)
        if index is not None:
            return index
        unk = self.unk_id
        if unk is None:
            raise KeyError(
                f"token {token!r} is not in the vocabulary and this tokenizer has no unk_token"
            )
        return unk

    def convert_ids_to_tokens(
        self, ids: Union[int, Sequence[int]], skip_special_tokens: bool = False
    ) -> Union[str, List[str]]:
        """Map an id (or a sequence of ids) back to its token."""
        if isinstance(ids, int) and not isinstance(ids, bool):
            return self._id_to_token(ids)
        tokens = [self._id_to_token(index) for index in _as_id_list(ids)]
        if skip_special_tokens:
            tokens = [token for token in tokens if token not in self._special_set]
        return tokens

    # ----------------------------------------------------------------------------------------
    # Text <-> tokens <-> ids
    # ----------------------------------------------------------------------------------------
    def _split_on_added(self, text: str) -> List[Tuple[str, bool]]:
        """Cut ``text`` into (piece, is_added_token) runs, longest added token first."""
        if not self._no_split:
            return [(text, False)]
        if self._split_regex is None:
            ordered = sorted(self._no_split, key=lambda t: (-len(t), t))
            self._split_regex = re.compile("(" + "|".join(map(re.escape, ordered)) + ")")
        pieces = self._split_regex.split(text)
        # re.split with one group alternates: text, match, text, match, ..., text
        return [(piece, index % 2 == 1) for index, piece in enumerate(pieces) if piece]

    def tokenize(self, text: str) -> List[str]:
        """Split ``text`` into tokens; added and special tokens in it are kept whole."""
        if not isinstance(text, str):
            raise TypeError(f"tokenize() takes a str, got {type(text).__name__}")
        tokens: List[str] = []
        for piece, is_added in self._split_on_added(text):
            if is_added:
                tokens.append(piece)
            else:
                tokens.extend(self._tokenize(piece))
        return tokens

    def num_special_tokens_to_add(self) -> int:
        """How many ids :meth:`encode` adds around a sequence when ``add_special_tokens=True``."""
        return len(self.build_inputs_with_special_tokens([]))

    def encode(
        self,
        text: str,
        add_special_tokens: bool = True,
        max_length: Optional[int] = None,
        truncation: bool = False,
        padding: PaddingArg = False,
    ) -> List[int]:
        """Text -> ids.

        Args:
            add_special_tokens: wrap the ids as the model expects (BERT: ``[CLS] ... [SEP]``;
                GPT-2: nothing).
            max_length: the length that ``truncation`` cuts to and ``padding`` fills to.
                Without ``truncation`` a longer text is returned whole.
            truncation: cut the text's ids so that the result, special tokens included, has at
                most ``max_length`` ids (``model_max_length`` when ``max_length`` is None).
            padding: ``True`` or ``"max_length"`` appends ``pad_id`` up to ``max_length``
                (on ``padding_side``); ``False`` or ``"longest"`` leaves a single text as is.
        """
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
        add_special_tokens: bool = True,
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

    def _encode_unpadded(
        self, text: str, add_special_tokens: bool, max_length: Optional[int], truncation: bool
    ) -> List[int]:
        ids = self.convert_tokens_to_ids(self.tokenize(text))
        if truncation:
            limit = self._require_length(max_length, "truncation")
            reserved = self.num_special_tokens_to_add() if add_special_tokens else 0
            if limit < reserved:
                raise ValueError(
                    f"max_length={limit} leaves no room: {reserved} special tokens are added; "
                    f"use max_length >= {reserved} or add_special_tokens=False"
                )
            ids = ids[: limit - reserved]
        return self.build_inputs_with_special_tokens(ids) if add_special_tokens else ids

    def _require_length(self, max_length: Optional[int], what: str) -> int:
        length = max_length if max_length is not None else self.model_max_length
        if length is None:
            raise ValueError(
                f"{what} needs max_length (or a tokenizer built with model_max_length=...)"
            )
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise ValueError(f"max_length must be a non-negative int, got {length!r}")
        return length

    def _require_pad_id(self) -> int:
        pad = self.pad_id
        if pad is None:
            raise ValueError(
                f"{type(self).__name__} has no pad token, so it cannot pad; build it with "
                "pad_token=... (for GPT-2 the usual choice is '<|endoftext|>')"
            )
        return pad

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """Ids -> text. Accepts a list, a tuple, or a 1-D numpy/oneflow integer array."""
        tokens = self.convert_ids_to_tokens(_as_id_list(ids), skip_special_tokens)
        return self.convert_tokens_to_string(tokens)

    def save_vocabulary(self, directory: str) -> Tuple[str, ...]:
        """Write the vocabulary files into ``directory`` (created if needed); return their paths.

        Added tokens are not written: pass the same special-token arguments when loading.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(vocab_size={self.vocab_size}, "
            f"special_tokens={self.special_tokens_map})"
        )


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
