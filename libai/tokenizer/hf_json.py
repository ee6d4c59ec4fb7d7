"""A Hugging Face ``tokenizer.json`` behind libai's tokenizer interface.

``tokenizer.json`` is the single-file format of the ``tokenizers`` library (normalizer,
pre-tokenizer, BPE / WordPiece / Unigram model, post-processor, decoder, added tokens): every
recent checkpoint ships one. :class:`JSONTokenizer` hands the text to that library, so the ids
are exactly those transformers' fast tokenizers give, and adds libai's interface around it
(special-token roles, ``encode`` options, padding, chat templates). Nothing of the algorithms is
re-implemented here.
"""
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from tokenizers import Tokenizer

from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.decoding import clean_up_tokenization
from libai.tokenizer.encoding import _as_id_list
from libai.tokenizer.hf_config import tokenizer_arguments

__all__ = ["JSONTokenizer"]

TOKENIZER_FILE = "tokenizer.json"


class JSONTokenizer(BaseTokenizer):
    """A tokenizer read from ``tokenizer.json`` with the ``tokenizers`` package.

    Args:
        vocab_file: path of ``tokenizer.json``, or of a directory holding it (its
            tokenizer_config.json then supplies the special tokens, padding side and chat
            template, as in ``from_pretrained``). Named as libai's other tokenizers name their
            file, so configs and ``tools/preprocess_data.py --vocab-file`` work alike.
        tokenizer_file: the same, under Hugging Face's name.
        tokenizer_object: a ``tokenizers.Tokenizer`` to wrap instead of a file.
        clean_up_tokenization_spaces: ``decode`` removes spaces before punctuation (as
            tokenizer_config.json says; False by default).
        **kwargs: :class:`~libai.tokenizer.base.BaseTokenizer`'s (special tokens,
            ``padding_side``, ``model_max_length``, ``chat_template`` ...).

    ``encode`` adds the post-processor's special tokens by default (``add_special_tokens``
    None means True here, as Hugging Face's ``encode``).
    """

    vocab_files_names = {"vocab_file": TOKENIZER_FILE}
    spaces_between_special_tokens = False

    def __init__(self, vocab_file: Optional[str] = None, *, tokenizer_file: Optional[str] = None,
                 tokenizer_object: Optional[Tokenizer] = None,
                 clean_up_tokenization_spaces: Optional[bool] = None, **kwargs: Any) -> None:
        tokenizer_file = vocab_file if vocab_file is not None else tokenizer_file
        if tokenizer_file is not None and os.path.isdir(tokenizer_file):
            saved = tokenizer_arguments(tokenizer_file)
            saved.pop("_config")
            kwargs = {**saved, **kwargs}
            if clean_up_tokenization_spaces is None:
                clean_up_tokenization_spaces = kwargs.pop("clean_up_tokenization_spaces", False)
            kwargs.pop("clean_up_tokenization_spaces", None)
            tokenizer_file = os.path.join(tokenizer_file, TOKENIZER_FILE)
        if tokenizer_object is None:
            if tokenizer_file is None or not os.path.isfile(tokenizer_file):
                raise FileNotFoundError(f"JSONTokenizer needs a {TOKENIZER_FILE}; got {tokenizer_file!r}")
            tokenizer_object = Tokenizer.from_file(os.fspath(tokenizer_file))
        self._tk = tokenizer_object
        # transformers encodes without the file's own truncation/padding settings
        self._tk.no_truncation()
        self._tk.no_padding()
        self.clean_up_tokenization_spaces = bool(clean_up_tokenization_spaces)
        kwargs.setdefault("add_bos_token", True)
        super().__init__(**kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str, *init_inputs: Any,
                        **kwargs: Any) -> "JSONTokenizer":
        """Read ``tokenizer.json`` and tokenizer_config.json's special tokens, padding side,
        chat template ... from a directory; ``kwargs`` override them."""
        directory = os.fspath(pretrained_model_name_or_path)
        path = os.path.join(directory, TOKENIZER_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no {TOKENIZER_FILE} in {directory}")
        arguments = tokenizer_arguments(directory)
        arguments.pop("_config")
        arguments.update(kwargs)
        return cls(path, **arguments)

    @property
    def backend(self) -> Tokenizer:
        """The ``tokenizers.Tokenizer`` doing the work (for batch encoding in preprocessing)."""
        return self._tk

    # -- vocabulary --------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self._tk.get_vocab_size(with_added_tokens=False)

    def __len__(self) -> int:
        return self._tk.get_vocab_size(with_added_tokens=True)

    def _base_id(self, token: str) -> Optional[int]:
        return self._tk.token_to_id(token)

    def _token_to_id(self, token: str) -> Optional[int]:
        return self._tk.token_to_id(token)

    def _convert_id_to_token(self, index: int) -> str:
        return self._id_to_token(index)

    def _id_to_token(self, index: Any) -> str:
        token = self._tk.id_to_token(int(index))
        if token is None:
            raise IndexError(f"token id {index} is outside the vocabulary (ids 0..{len(self) - 1})")
        return token

    def get_vocab(self) -> Dict[str, int]:
        return self._tk.get_vocab(with_added_tokens=True)

    def _base_vocab(self) -> Dict[str, int]:
        return self._tk.get_vocab(with_added_tokens=False)

    def get_added_vocab(self) -> Dict[str, int]:
        return {added.content: index for index, added in self._tk.get_added_tokens_decoder().items()}

    def is_added_token(self, token: str) -> bool:
        return token in self.get_added_vocab()

    def add_tokens(self, new_tokens: Union[str, Sequence[str]], special_tokens: bool = False) -> int:
        """Add tokens that are never split (special ones are also skipped by ``decode(...,
        skip_special_tokens=True)``); return how many new ids were created."""
        if isinstance(new_tokens, str):
            new_tokens = [new_tokens]
        tokens = list(new_tokens or ())
        for token in tokens:
            if not isinstance(token, str) or not token:
                raise TypeError(f"added tokens must be non-empty strings, got {token!r}")
        added = self.get_added_vocab()
        tokens = [t for t in tokens if t not in added]
        if not tokens:
            return 0
        if special_tokens:
            return self._tk.add_special_tokens(tokens)
        return self._tk.add_tokens(tokens)

    def _restore_added_tokens(self, saved: Dict[str, int]) -> None:
        """Added tokens live in tokenizer.json itself; an added_tokens.json must agree with it."""
        for token, index in saved.items():
            if self._tk.token_to_id(token) != index:
                self.add_tokens([token])
        self.sanitize_special_tokens()

    # -- text <-> ids ------------------------------------------------------------------------
    def tokenize(self, text: str, **kwargs: Any) -> List[str]:
        if not isinstance(text, str):
            raise TypeError(f"tokenize() takes a str, got {type(text).__name__}")
        return self._tk.encode(text, add_special_tokens=False).tokens

    def _tokenize(self, text: str) -> List[str]:
        return self.tokenize(text)

    def _encode_unpadded(self, text: str, add_special_tokens: Optional[bool],
                         max_length: Optional[int], truncation: bool) -> List[int]:
        wrap = self.add_bos_token if add_special_tokens is None else add_special_tokens
        encoding = self._tk.encode(text, add_special_tokens=False)
        if truncation:
            limit = self._require_length(max_length, "truncation")
            reserved = self.num_special_tokens_to_add() if wrap else 0
            if limit < reserved:
                raise ValueError(f"max_length={limit} leaves no room: {reserved} special tokens "
                                 f"are added; use max_length >= {reserved} or add_special_tokens=False")
            encoding.truncate(limit - reserved)
        if wrap and self._tk.post_processor is not None:
            encoding = self._tk.post_process(encoding, None, add_special_tokens=True)
        return list(encoding.ids)

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        processor = self._tk.post_processor
        return 0 if processor is None else processor.num_special_tokens_to_add(pair)

    def build_inputs_with_special_tokens(self, token_ids_0: List[int],
                                         token_ids_1: Optional[List[int]] = None) -> List[int]:
        """Wrap ids as the post-processor would (its layout is read off a probe encoding)."""
        if self._tk.post_processor is None:
            return list(token_ids_0) + list(token_ids_1 or [])
        pair = token_ids_1 is not None
        layouts = self.__dict__.setdefault("_layouts", {})
        if pair not in layouts:
            layouts[pair] = _special_layout(self._tk, pair)
        parts = layouts[pair]
        out = list(parts[0]) + list(token_ids_0) + list(parts[1])
        if token_ids_1 is not None:
            out += list(token_ids_1) + list(parts[2])
        return out

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        decoder = self._tk.decoder
        return decoder.decode(list(tokens)) if decoder is not None else " ".join(tokens)

    def decode(self, token_ids: Any, skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: Optional[bool] = None, **_: Any) -> str:
        """Ids -> text with the file's decoder (byte-level, Metaspace, WordPiece ...)."""
        text = self._tk.decode(_as_id_list(token_ids), skip_special_tokens=skip_special_tokens)
        clean = (self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None
                 else clean_up_tokenization_spaces)
        return clean_up_tokenization(text) if clean else text

    def save_vocabulary(self, save_directory: str, filename_prefix: Optional[str] = None) -> Tuple[str, ...]:
        os.makedirs(save_directory, exist_ok=True)
        name = f"{filename_prefix}-{TOKENIZER_FILE}" if filename_prefix else TOKENIZER_FILE
        path = os.path.join(save_directory, name)
        self._tk.save(path)
        return (path,)


def _special_layout(tk: Tokenizer, pair: bool) -> Tuple[Tuple[int, ...], ...]:
    """The ids the post-processor puts before, between and after the sequences."""
    probe_a, probe_b = _probe(tk), _probe(tk)
    a = tk.encode(probe_a[0], add_special_tokens=False)
    b = tk.encode(probe_b[0], add_special_tokens=False) if pair else None
    full = list(tk.post_process(a, b, add_special_tokens=True).ids)
    n_a = len(a.ids)
    start = _find(full, list(a.ids), 0)
    before, rest = full[:start], full[start + n_a:]
    if not pair:
        return tuple(before), tuple(rest), ()
    start_b = _find(rest, list(b.ids), 0)
    return tuple(before), tuple(rest[:start_b]), tuple(rest[start_b + len(b.ids):])


def _probe(tk: Tokenizer) -> Tuple[str]:
    for text in ("a", "x", "the", "1", "."):
        if tk.encode(text, add_special_tokens=False).ids:
            return (text,)
    raise ValueError("tokenizer.json encodes no probe text; cannot place its special tokens")


def _find(haystack: List[int], needle: List[int], start: int) -> int:
    for i in range(start, len(haystack) - len(needle) + 1):
        if haystack[i:i + len(needle)] == needle:
            return i
    raise ValueError("the post-processor rewrote the sequence; cannot place its special tokens")
