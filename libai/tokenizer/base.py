"""What every libai tokenizer offers, whatever its algorithm.

A tokenizer turns text into ids in three layers, and this base class owns the outer two:

1. *added tokens* (special tokens such as ``[CLS]`` or ``<|endoftext|>``, and any token added
   with :meth:`BaseTokenizer.add_tokens`) are cut out of the text first, so they are never split;
2. the pieces in between go to the subclass's algorithm (:meth:`BaseTokenizer._tokenize`);
3. ids are then wrapped with special tokens, truncated and padded as asked.

A subclass provides the base vocabulary through LiBai's (and Hugging Face's) hooks:
``vocab_size`` (base vocabulary only), ``_convert_token_to_id``, ``_convert_id_to_token``,
``_tokenize``, ``convert_tokens_to_string``, ``save_vocabulary`` and, when it wraps
sequences, ``build_inputs_with_special_tokens``. It may call ``super().__init__`` before or
after loading its vocabulary: special tokens are given ids once construction has finished
(see :class:`_RegistersSpecialTokens`). Everything a data pipeline calls (``encode``,
``decode``, ``batch_encode``, ``eod_id``, ``pad_id``, ...) is defined here once, so it means the
same for every tokenizer (the encoding and decoding half lives in :mod:`libai.tokenizer.encoding`).
``libai.tokenizer.tokenization_base.PreTrainedTokenizer`` is this class under LiBai's name.
"""
import difflib
import inspect
import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from libai.tokenizer.added_tokens import NoSplitTokens
from libai.tokenizer.chat_template import ChatTemplateMixin
from libai.tokenizer.encoding import EncodingMixin, _as_id_list
from libai.tokenizer.padding import check_padding_side
from libai.tokenizer.pretrained import PretrainedFilesMixin
from libai.tokenizer.special_tokens import SPECIAL_ROLES, SpecialTokensMixin
from libai.tokenizer.vocab_size import PaddedVocabSize

__all__ = ["BaseTokenizer"]

logger = logging.getLogger(__name__)


class _RegistersSpecialTokens(type):
    """Give the special tokens their ids after the whole constructor has run, and remember the
    constructor's keyword arguments for :meth:`~BaseTokenizer.save_pretrained`.

    Tokenizers written for LiBai call ``super().__init__(...)`` *before* loading their
    vocabulary, ours after; doing this at the end of construction serves both.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        tokenizer = super().__call__(*args, **kwargs)
        tokenizer.init_kwargs = _keyword_arguments(cls, args, kwargs)
        tokenizer.init_inputs = ()
        tokenizer.sanitize_special_tokens()
        return tokenizer


def _keyword_arguments(cls: type, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The constructor call as keyword arguments (positional ones named by the signature)."""
    try:
        bound = inspect.signature(cls.__init__).bind_partial(None, *args, **kwargs)
    except TypeError:
        return dict(kwargs)
    named = dict(bound.arguments)
    named.pop(next(iter(named)), None)  # self
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD and name in named:
            named.update(named.pop(name))
    return named


class BaseTokenizer(SpecialTokensMixin, EncodingMixin, PretrainedFilesMixin, ChatTemplateMixin,
                    metaclass=_RegistersSpecialTokens):
    """Shared machinery: special and added tokens, id conversion, encode/decode, padding, files.

    Args:
        unk_token, pad_token, cls_token, sep_token, mask_token, bos_token, eos_token,
            eod_token: the special token for each role, or None for none. A special token
            missing from the vocabulary gets the next free id.
        additional_special_tokens: more special tokens (e.g. ``<extra_id_0>`` sentinels).
        add_bos_token: LiBai's name for "``encode`` adds the model's special tokens by
            default" (BERT: ``[CLS] … [SEP]``; RoBERTa: ``<s> … </s>``; GPT-2: a leading
            ``<|endoftext|>``; T5: a trailing ``</s>``). False, as in LiBai.
        model_max_length: default ``max_length`` for ``truncation=True``.
        padding_side: ``"right"`` (default) or ``"left"`` (handy for generation).
        verbose: accepted for LiBai (which logs each added token when True). It is the only
            positional argument, as in LiBai's ``PreTrainedTokenizer(verbose=True, **kwargs)``,
            so a tokenizer written for LiBai may call ``super().__init__(name)``; the special
            tokens are keyword-only.
        **kwargs: unknown arguments are kept in ``init_kwargs`` and ignored with a warning:
            LiBai's own configs pass ``do_lower_case`` to GPT-2, which has no such option.
    """

    #: ``decode`` puts a space between added tokens and the text around them (tokenizers
    #: whose tokens do not carry their spaces: WordPiece, SentencePiece).
    spaces_between_special_tokens: bool = True
    #: ``decode`` removes spaces before punctuation by default (lossy tokenizers only).
    clean_up_tokenization_spaces: bool = False

    def __init__(
        self,
        verbose: bool = True,
        *,
        unk_token: Optional[str] = None,
        pad_token: Optional[str] = None,
        cls_token: Optional[str] = None,
        sep_token: Optional[str] = None,
        mask_token: Optional[str] = None,
        bos_token: Optional[str] = None,
        eos_token: Optional[str] = None,
        eod_token: Optional[str] = None,
        additional_special_tokens: Optional[Sequence[str]] = None,
        add_bos_token: bool = False,
        model_max_length: Optional[int] = None,
        padding_side: str = "right",
        **kwargs: Any,
    ) -> None:
        self.chat_template = kwargs.pop("chat_template", None)
        if kwargs:
            self._warn_unused(kwargs)
        given = dict(zip(SPECIAL_ROLES, (unk_token, pad_token, cls_token, sep_token,
                                         mask_token, bos_token, eos_token, eod_token)))
        self._init_special_tokens(given, additional_special_tokens)
        self.added_tokens_encoder: Dict[str, int] = {}
        self.added_tokens_decoder: Dict[int, str] = {}
        self._no_split = NoSplitTokens()
        self._padded_vocab_size: Optional[int] = None
        self.add_bos_token = add_bos_token
        self.model_max_length = model_max_length
        self.padding_side = check_padding_side(padding_side)
        self.verbose = verbose

    def _warn_unused(self, kwargs: Dict[str, Any]) -> None:
        known = list(inspect.signature(type(self).__init__).parameters)
        for name in kwargs:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            logger.warning(f"{type(self).__name__} ignores the argument {name}={kwargs[name]!r}{hint}")

    # ----------------------------------------------------------------------------------------
    # What a subclass provides (LiBai's hook names)
    # ----------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Size of the base vocabulary (the files), without added tokens; ``len()`` counts all."""
        raise NotImplementedError

    def _tokenize(self, text: str) -> List[str]:
        """Split text that holds no added token into model tokens."""
        raise NotImplementedError

    def _convert_token_to_id(self, token: str) -> Optional[int]:
        """The base-vocabulary id of ``token``, or the unknown token's id."""
        index = self._base_id(token)
        return index if index is not None else self.unk_token_id

    def _convert_id_to_token(self, index: int) -> str:
        """The base-vocabulary token whose id is ``index`` (0 <= index < vocab_size)."""
        raise NotImplementedError

    def _base_id(self, token: str) -> Optional[int]:
        """The base-vocabulary id of ``token``, or None when it is not there.

        Ours override this; a subclass written for LiBai overrides ``_convert_token_to_id``
        (which answers the unknown token's id instead of None), and this tells them apart.
        """
        if type(self)._convert_token_to_id is BaseTokenizer._convert_token_to_id:
            raise NotImplementedError(f"{type(self).__name__} must define _convert_token_to_id")
        index = self._convert_token_to_id(token)
        unk = self._special_tokens.get("unk")
        if index is None or (unk is not None and token != unk
                             and index == self._convert_token_to_id(unk)):
            return None
        return index

    def _base_vocab(self) -> Dict[str, int]:
        """The base vocabulary, token -> id (subclasses with a dict at hand return it)."""
        return {self._convert_id_to_token(i): i for i in range(self.vocab_size)}

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        """Join tokens back into text (the inverse of :meth:`tokenize` where possible)."""
        return " ".join(tokens)

    def build_inputs_with_special_tokens(
        self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None
    ) -> List[int]:
        """Wrap one sequence (or a pair) with the model's special tokens; default: concatenate."""
        return list(token_ids_0) + list(token_ids_1 or [])

    # ----------------------------------------------------------------------------------------
    # Vocabulary
    # ----------------------------------------------------------------------------------------
    @property
    def base_vocab_size(self) -> int:
        """Same as :attr:`vocab_size`: the tokens of the vocabulary files."""
        return self.vocab_size

    def __len__(self) -> int:
        """Every id, added tokens included."""
        return self.vocab_size + len(self.added_tokens_encoder)

    @property
    def padded_vocab_size(self) -> PaddedVocabSize:
        """Embedding rows a model should allocate: ``len(tokenizer)`` unless
        :func:`build_tokenizer` rounded it up. Calling it, ``padded_vocab_size(multiple)``, is
        LiBai's spelling of :func:`pad_vocab_size` on ``len(tokenizer)``."""
        size = len(self) if self._padded_vocab_size is None else max(self._padded_vocab_size, len(self))
        return PaddedVocabSize(size, len(self))

    @padded_vocab_size.setter
    def padded_vocab_size(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < len(self):
            raise ValueError(f"padded_vocab_size must be an int >= len(tokenizer) ({len(self)}), got {value!r}")
        self._padded_vocab_size = int(value)

    def get_vocab(self) -> Dict[str, int]:
        """Every token -> id, added tokens included."""
        vocab = dict(self._base_vocab())
        vocab.update(self.added_tokens_encoder)
        return vocab

    def get_added_vocab(self) -> Dict[str, int]:
        """The tokens appended after the vocabulary files, token -> id (a copy)."""
        return dict(self.added_tokens_encoder)

    def add_tokens(self, new_tokens: Union[str, Sequence[str]], special_tokens: bool = False) -> int:
        """Add tokens that are never split; those not in the vocabulary get new ids.

        Returns how many ids were created. A tokenizer that lower-cases (``do_lower_case``)
        lower-cases ordinary added tokens and finds them in any case; ``special_tokens=True``
        keeps them exactly as written (to make them *special*, i.e. left out by
        ``skip_special_tokens``, use :meth:`add_special_tokens`).
        """
        if isinstance(new_tokens, str):
            new_tokens = [new_tokens]
        caseless = not special_tokens and bool(getattr(self, "do_lower_case", False))
        created = 0
        no_split = []
        for token in new_tokens or ():
            if not isinstance(token, str) or not token:
                raise TypeError(f"added tokens must be non-empty strings, got {token!r}")
            if caseless:
                token = token.lower()
            if self._token_to_id(token) is None:
                new_id = len(self)
                self.added_tokens_encoder[token] = new_id
                self.added_tokens_decoder[new_id] = token
                created += 1
                no_split.append(token)
            elif special_tokens:
                no_split.append(token)
        self._no_split.add(no_split, caseless=caseless)
        return created

    def _restore_added_tokens(self, saved: Dict[str, int]) -> None:
        """Replace the added tokens by ``saved`` (token -> id, as ``added_tokens.json``), then
        give any special token still without an id the next one."""
        self.added_tokens_encoder, self.added_tokens_decoder = {}, {}
        self._no_split = NoSplitTokens()
        specials = set(self.all_special_tokens_unordered())
        for token, index in sorted(saved.items(), key=lambda item: item[1]):
            if index != len(self):
                raise ValueError(
                    f"added_tokens.json gives {token!r} the id {index}, but the next free id is "
                    f"{len(self)}: added ids must continue the vocabulary without gaps"
                )
            self.add_tokens([token], special_tokens=token in specials)
        self.sanitize_special_tokens()

    def is_added_token(self, token: str) -> bool:
        """True for special tokens and tokens registered with :meth:`add_tokens`."""
        return token in self._no_split

    # ----------------------------------------------------------------------------------------
    # Tokens <-> ids
    # ----------------------------------------------------------------------------------------
    def _token_to_id(self, token: str) -> Optional[int]:
        if token in self.added_tokens_encoder:
            return self.added_tokens_encoder[token]
        return self._base_id(token)

    def _id_to_token(self, index: Any) -> str:
        if isinstance(index, bool) or not isinstance(index, int):
            try:
                index = int(index)  # numpy and oneflow integer scalars
            except (TypeError, ValueError):
                raise TypeError(f"token ids must be integers, got {index!r}") from None
        if 0 <= index < self.vocab_size:
            return self._convert_id_to_token(index)
        if index in self.added_tokens_decoder:
            return self.added_tokens_decoder[index]
        raise IndexError(f"token id {index} is outside the vocabulary (ids 0..{len(self) - 1})")

    def convert_tokens_to_ids(self, tokens: Union[str, Sequence[str], None]) -> Any:
        """Map a token, a list of tokens or a list of lists to ids; unknown tokens map to
        ``unk_token_id``."""
        if tokens is None:
            return None
        if isinstance(tokens, str):
            return self._lookup(tokens)
        return [self.convert_tokens_to_ids(t) if isinstance(t, (list, tuple)) else self._lookup(t)
                for t in tokens]

    def _lookup(self, token: str) -> int:
        index = self._token_to_id(token)
        if index is not None:
            return index
        unk = self.unk_token_id
        if unk is None:
            raise KeyError(f"token {token!r} is not in the vocabulary and this tokenizer has no unk_token")
        return unk

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> Union[str, List[str]]:
        """Map an id (or a sequence of ids) back to its token(s)."""
        if isinstance(ids, int) and not isinstance(ids, bool):
            return self._id_to_token(ids)
        tokens = [self._id_to_token(index) for index in _as_id_list(ids)]
        if skip_special_tokens:
            specials = set(self.all_special_tokens)
            tokens = [token for token in tokens if token not in specials]
        return tokens

    # ----------------------------------------------------------------------------------------
    # Text -> tokens (ids -> model inputs and back: EncodingMixin, libai.tokenizer.encoding)
    # ----------------------------------------------------------------------------------------
    def tokenize(self, text: str, **kwargs: Any) -> List[str]:
        """Split ``text`` into tokens; added and special tokens in it are kept whole."""
        if not isinstance(text, str):
            raise TypeError(f"tokenize() takes a str, got {type(text).__name__}")
        tokens: List[str] = []
        for piece, is_added in self._no_split.split(text):
            if is_added:
                tokens.append(piece)
            else:
                tokens.extend(self._tokenize(piece))
        return tokens

    def save_vocabulary(self, save_directory: str, filename_prefix: Optional[str] = None) -> Tuple[str, ...]:
        """Write the vocabulary files into ``save_directory`` (created if needed); return their
        paths. Added tokens are not written (:meth:`save_pretrained` writes them too)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size}, len={len(self)}, special_tokens={self.special_tokens_map})"
