"""Special tokens: the named roles (``[CLS]``, ``<pad>``, ...) and the additional ones.

A tokenizer knows a handful of tokens by their *role* rather than their text: data pipelines
ask for ``pad_token_id`` or ``eod_id`` without caring whether the vocabulary spells padding
``[PAD]`` or ``<pad>``. This mixin stores role -> token, answers the ``*_token`` / ``*_id`` /
``*_token_id`` questions, and lets the roles change later (``add_special_tokens``), as LiBai's
and Hugging Face's tokenizers allow. Special tokens are never split and never lower-cased, and
``decode(..., skip_special_tokens=True)`` leaves them out.

The ids themselves come from the tokenizer (:class:`~libai.tokenizer.base.BaseTokenizer`):
a special token that is not in the vocabulary file is appended to it.
"""
import logging
import operator
from typing import Dict, List, Mapping, Optional, Sequence, Union

__all__ = ["SpecialTokensMixin", "SPECIAL_ROLES", "SPECIAL_TOKENS_ATTRIBUTES"]

logger = logging.getLogger(__name__)

#: The named roles, in the order missing tokens are appended to a vocabulary.
SPECIAL_ROLES = ("unk", "pad", "cls", "sep", "mask", "bos", "eos", "eod")

#: The keys ``add_special_tokens`` and ``special_tokens_map`` use (LiBai's names).
SPECIAL_TOKENS_ATTRIBUTES = [f"{role}_token" for role in SPECIAL_ROLES] + [
    "additional_special_tokens"
]


def _check_token(key: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{key} must be a non-empty string or None, got {value!r}")
    return value


def _token_property(role: str) -> property:
    def getter(self: "SpecialTokensMixin") -> Optional[str]:
        return self._role_token(role)

    def setter(self: "SpecialTokensMixin", value: Optional[str]) -> None:
        self._set_role(role, value)

    return property(getter, setter, doc=f"The {role} token, or None when there is none.")


def _id_property(role: str) -> property:
    def getter(self: "SpecialTokensMixin") -> Optional[int]:
        assigned = self.__dict__.get("_assigned_role_ids", {})
        if role in assigned:
            return assigned[role]
        token = self._role_token(role)
        return None if token is None else self._token_to_id(token)

    def setter(self: "SpecialTokensMixin", value: Optional[int]) -> None:
        # Tokenizers written for LiBai assign their ids themselves (``self.cls_id = vocab["[CLS]"]``),
        # often before or without naming the token; the assigned id wins over the role's token.
        assigned = self.__dict__.setdefault("_assigned_role_ids", {})
        if value is None:
            assigned.pop(role, None)
            return
        if isinstance(value, bool):
            raise TypeError(f"{role}_id must be an int or None, got {value!r}")
        try:
            assigned[role] = operator.index(value)  # ints, numpy / oneflow integer scalars
        except TypeError:
            raise TypeError(f"{role}_id must be an int or None, got {value!r}") from None

    return property(
        getter,
        setter,
        doc=f"The id of the {role} token, or None when there is none. Assignable, as the plain "
        f"attributes of LiBai's tokenizers are; ``None`` goes back to the {role} token's id.",
    )


class SpecialTokensMixin:
    """Role -> token bookkeeping shared by every tokenizer (see the module docstring).

    Subclasses set ``default_eod_role`` to the role whose token ends a document when no
    ``eod_token`` is given (GPT-2: ``"eos"``; BERT, which has no end-of-document token:
    ``"sep"``).
    """

    default_eod_role: Optional[str] = "eos"

    _special_tokens: Dict[str, str]
    _additional_special_tokens: List[str]

    def _init_special_tokens(
        self, given: Mapping[str, Optional[str]], additional: Optional[Sequence[str]]
    ) -> None:
        self._special_tokens = {}
        for role, token in given.items():
            if token is not None:
                self._special_tokens[role] = _check_token(f"{role}_token", token)
        self._additional_special_tokens = [
            _check_token("additional_special_tokens", t) for t in (additional or ())
        ]

    # -- provided by the tokenizer --------------------------------------------------------------
    def _token_to_id(self, token: str) -> Optional[int]:
        raise NotImplementedError

    def add_tokens(self, new_tokens: Union[str, Sequence[str]], special_tokens: bool = False) -> int:
        raise NotImplementedError

    # -- roles ------------------------------------------------------------------------------------
    def _role_token(self, role: str) -> Optional[str]:
        token = self._special_tokens.get(role)
        if token is None and role == "eod" and self.default_eod_role is not None:
            token = self._special_tokens.get(self.default_eod_role)
        return token

    def _set_role(self, role: str, value: Optional[str]) -> None:
        if value is None:
            self._special_tokens.pop(role, None)
            return
        self._special_tokens[role] = _check_token(f"{role}_token", value)
        self.add_tokens([value], special_tokens=True)

    unk_token = _token_property("unk")
    pad_token = _token_property("pad")
    cls_token = _token_property("cls")
    sep_token = _token_property("sep")
    mask_token = _token_property("mask")
    bos_token = _token_property("bos")
    eos_token = _token_property("eos")
    eod_token = _token_property("eod")
    unk_id = unk_token_id = _id_property("unk")
    pad_id = pad_token_id = _id_property("pad")
    cls_id = cls_token_id = _id_property("cls")
    sep_id = sep_token_id = _id_property("sep")
    mask_id = mask_token_id = _id_property("mask")
    bos_id = bos_token_id = _id_property("bos")
    eos_id = eos_token_id = _id_property("eos")
    eod_id = eod_token_id = _id_property("eod")

    @property
    def start_token(self) -> Optional[str]:
        """The token that starts a sequence: ``bos_token`` or ``cls_token``, whichever is set
        (LiBai's common name for the two). None when neither is, or when both are set to
        different tokens (which one a caller meant is then unknowable; a warning says so)."""
        return self._either("bos", "cls", "start_token")

    @property
    def end_token(self) -> Optional[str]:
        """The token that ends a sequence: ``eos_token`` or ``sep_token`` (see
        :attr:`start_token`). The end-of-document token is not considered."""
        return self._either("eos", "sep", "end_token")

    @property
    def start_token_id(self) -> Optional[int]:
        token = self.start_token
        return None if token is None else self._token_to_id(token)

    @property
    def end_token_id(self) -> Optional[int]:
        token = self.end_token
        return None if token is None else self._token_to_id(token)

    def _either(self, first: str, second: str, name: str) -> Optional[str]:
        a, b = self._special_tokens.get(first), self._special_tokens.get(second)
        if a is not None and b is not None and a != b:
            logger.warning(f"{name} is ambiguous: {first}_token={a!r} and {second}_token={b!r} differ")
            return None
        return a if a is not None else b

    @property
    def eod(self) -> Optional[int]:
        """Same as :attr:`eod_id` (the Megatron spelling)."""
        return self.eod_id

    @property
    def additional_special_tokens(self) -> List[str]:
        """Special tokens without a role, e.g. T5's ``<extra_id_0>`` sentinels (a copy)."""
        return list(self._additional_special_tokens)

    @additional_special_tokens.setter
    def additional_special_tokens(self, value: Sequence[str]) -> None:
        self._additional_special_tokens = [
            _check_token("additional_special_tokens", t) for t in (value or ())
        ]
        self.add_tokens(self._additional_special_tokens, special_tokens=True)

    @property
    def additional_special_tokens_ids(self) -> List[int]:
        """Ids of :attr:`additional_special_tokens`."""
        return [self._token_to_id(t) for t in self._additional_special_tokens]

    # -- views --------------------------------------------------------------------------------------
    @property
    def special_tokens_map(self) -> Dict[str, Union[str, List[str]]]:
        """``{"unk_token": "[UNK]", ..., "additional_special_tokens": [...]}`` for what is set
        (what ``save_pretrained`` writes to ``special_tokens_map.json``)."""
        mapping: Dict[str, Union[str, List[str]]] = {
            f"{role}_token": token for role, token in self._special_tokens.items()
        }
        if self._additional_special_tokens:
            mapping["additional_special_tokens"] = list(self._additional_special_tokens)
        return mapping

    @property
    def all_special_tokens(self) -> List[str]:
        """Every special token (roles and additional ones) once, sorted by id."""
        tokens = set(self._special_tokens.values()) | set(self._additional_special_tokens)
        return sorted(tokens, key=lambda t: (self._token_to_id(t), t))

    @property
    def all_special_ids(self) -> List[int]:
        """Ids of :attr:`all_special_tokens`."""
        return [self._token_to_id(token) for token in self.all_special_tokens]

    # -- changing them ------------------------------------------------------------------------------
    def add_special_tokens(self, special_tokens_dict: Mapping[str, Union[str, Sequence[str]]]) -> int:
        """Set roles (``{"pad_token": "<pad>"}``) or replace the additional special tokens
        (``{"additional_special_tokens": [...]}``); tokens not yet in the vocabulary get new ids.

        Returns how many new ids were created (the model's embedding must grow by that much).
        """
        created = 0
        for key, value in special_tokens_dict.items():
            if key not in SPECIAL_TOKENS_ATTRIBUTES:
                raise KeyError(
                    f"{key!r} is not a special token attribute; use one of "
                    f"{SPECIAL_TOKENS_ATTRIBUTES} (or add_tokens() for ordinary tokens)"
                )
            before = len(self)  # type: ignore[arg-type]
            if key == "additional_special_tokens":
                if isinstance(value, str):
                    raise TypeError("additional_special_tokens must be a list of strings")
                self.additional_special_tokens = list(value)
            else:
                setattr(self, key, value)
            created += len(self) - before  # type: ignore[arg-type]
        return created

    def sanitize_special_tokens(self) -> int:
        """Give every special token an id (appending missing ones); return how many were new."""
        return self.add_tokens(self.all_special_tokens_unordered(), special_tokens=True)

    def all_special_tokens_unordered(self) -> List[str]:
        """Special tokens in registration order: roles first (in :data:`SPECIAL_ROLES` order),
        then the additional ones; the order in which missing ones receive ids."""
        ordered = [self._special_tokens[r] for r in SPECIAL_ROLES if r in self._special_tokens]
        return list(dict.fromkeys(ordered + self._additional_special_tokens))
