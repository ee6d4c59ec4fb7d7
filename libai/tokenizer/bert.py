"""BERT's tokenizer: basic word splitting, then WordPiece, over a ``vocab.txt``."""
from typing import Any, Dict, Iterable, List, Optional, Tuple

from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.chinese_wwm import (
    Segmenter,
    continuation_flags,
    default_segmenter,
    mark_continuations,
)
from libai.tokenizer.fast_backend import FastBackendMixin, wordpiece_backend
from libai.tokenizer.unicode_chars import is_cjk
from libai.tokenizer.vocab_files import VOCAB_TXT, load_wordpiece_vocab, save_wordpiece_vocab
from libai.tokenizer.wordpiece import BasicTokenizer, WordpieceTokenizer

__all__ = ["BertTokenizer", "VOCAB_FILES_NAMES"]

VOCAB_FILES_NAMES = {"vocab_file": VOCAB_TXT}

_PUBLISHED = ("bert-base-uncased", "bert-large-uncased", "bert-base-cased", "bert-large-cased",
              "bert-base-chinese")


class BertTokenizer(FastBackendMixin, BaseTokenizer):
    """WordPiece tokenizer for BERT-style models, from a ``vocab.txt`` (one token per line).

    ``encode(text, add_special_tokens=True)`` (or every ``encode`` of a tokenizer built with
    ``add_bos_token=True``) wraps a text as ``[CLS] ... [SEP]``; ``eod_id`` is ``[SEP]``'s id,
    which is what a text pipeline appends between documents.

    Args:
        vocab_file: path of the ``vocab.txt``. None exists yet? ``tools/train_vocab.py --type
            wordpiece`` makes one from a text corpus.
        do_lower_case: lower-case (and, unless ``strip_accents=False``, strip accents from) the
            text; True for "uncased" vocabularies.
        do_chinese_wwm: mark Chinese characters that continue a word as ``##字`` for whole-word
            masking (see :mod:`libai.tokenizer.chinese_wwm`); needs jieba or
            ``chinese_word_segmenter``.
        never_split: words passed through untouched (no lower-casing, splitting or WordPiece).
        tokenize_chinese_chars: one token per CJK ideograph.
        strip_accents: None follows ``do_lower_case``; True/False forces it.
        unk_token, sep_token, pad_token, cls_token, mask_token: the special tokens.
        chinese_word_segmenter: callable splitting a run of Chinese characters into words.
        max_input_chars_per_word: longer words become ``[UNK]`` (bounds the quadratic search).
        do_basic_tokenize: False skips the basic step (WordPiece on whitespace-split words).
        **kwargs: ``bos_token``, ``eos_token``, ``additional_special_tokens``,
            ``add_bos_token``, ``model_max_length``, ``padding_side`` (see :class:`BaseTokenizer`).
    """

    vocab_files_names = VOCAB_FILES_NAMES
    pretrained_vocab_files_map = {
        "vocab_file": {name: f"https://huggingface.co/{name}/resolve/main/vocab.txt" for name in _PUBLISHED}
    }
    max_model_input_sizes = {name: 512 for name in _PUBLISHED}
    pretrained_init_configuration = {name: {"do_lower_case": "uncased" in name} for name in _PUBLISHED}
    default_eod_role = "sep"  # BERT has no end-of-document token; [SEP] separates documents
    spaces_between_special_tokens = True
    clean_up_tokenization_spaces = True  # WordPiece lost the spacing: "a , b" -> "a, b"

    def __init__(
        self,
        vocab_file: str,
        do_lower_case: bool = True,
        do_chinese_wwm: bool = False,
        never_split: Optional[Iterable[str]] = None,
        tokenize_chinese_chars: bool = True,
        strip_accents: Optional[bool] = None,
        unk_token: str = "[UNK]",
        sep_token: str = "[SEP]",
        pad_token: str = "[PAD]",
        cls_token: str = "[CLS]",
        mask_token: str = "[MASK]",
        chinese_word_segmenter: Optional[Segmenter] = None,
        max_input_chars_per_word: int = 100,
        do_basic_tokenize: bool = True,
        **kwargs: Any,
    ) -> None:
        self.vocab_file = vocab_file
        self._vocab: Dict[str, int] = load_wordpiece_vocab(vocab_file)
        self._ids_to_tokens: List[str] = list(self._vocab)  # line order == id order
        self.do_lower_case = do_lower_case
        self.do_basic_tokenize = do_basic_tokenize
        self.do_chinese_wwm = do_chinese_wwm
        self.basic_tokenizer = BasicTokenizer(
            do_lower_case=do_lower_case,
            never_split=never_split,
            tokenize_chinese_chars=tokenize_chinese_chars,
            strip_accents=strip_accents,
        )
        self.wordpiece_tokenizer = WordpieceTokenizer(
            self._vocab, unk_token, max_input_chars_per_word
        )
        self._segmenter: Optional[Segmenter] = None
        if do_chinese_wwm:
            if not tokenize_chinese_chars:
                raise ValueError("do_chinese_wwm=True needs tokenize_chinese_chars=True")
            self._segmenter = chinese_word_segmenter or default_segmenter()
        super().__init__(
            unk_token=unk_token,
            sep_token=sep_token,
            pad_token=pad_token,
            cls_token=cls_token,
            mask_token=mask_token,
            **kwargs,
        )

    # -- vocabulary ----------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Tokens in ``vocab.txt`` (added tokens not counted; ``len()`` counts them)."""
        return len(self._vocab)

    def _base_vocab(self) -> Dict[str, int]:
        return self._vocab

    def _convert_id_to_token(self, index: int) -> str:
        return self._ids_to_tokens[index]

    def _base_id(self, token: str) -> Optional[int]:
        if self.do_chinese_wwm and _is_marked_cjk(token) and token[2:] in self._vocab:
            return self._vocab[token[2:]]  # a whole-word mark keeps the character's id
        return self._vocab.get(token)

    @property
    def vocab(self) -> Dict[str, int]:
        """The ``vocab.txt`` contents, token -> id (a copy)."""
        return dict(self._vocab)

    # -- tokenization --------------------------------------------------------------------------
    def _build_fast_backend(self) -> Optional[object]:
        """The ``tokenizers`` route to the same ids, for the plain BERT pipeline only."""
        basic = self.basic_tokenizer
        if (type(self)._tokenize is not BertTokenizer._tokenize or not self.do_basic_tokenize
                or self.do_chinese_wwm or basic.never_split or type(basic) is not BasicTokenizer
                or type(self.wordpiece_tokenizer) is not WordpieceTokenizer):
            return None
        return wordpiece_backend(self._vocab, self.wordpiece_tokenizer.unk_token,
                                 self.wordpiece_tokenizer.max_input_chars_per_word,
                                 basic.do_lower_case, basic.strip_accents, basic.tokenize_chinese_chars)

    @staticmethod
    def _backend_takes(piece: str) -> bool:
        """ASCII only: beyond it the two sides' Unicode tables differ (see fast_backend)."""
        return piece.isascii()

    def _tokenize(self, text: str) -> List[str]:
        if not self.do_basic_tokenize:
            return self.wordpiece_tokenizer.tokenize(text)
        words = self.basic_tokenizer.tokenize(text)
        if self._segmenter is not None:
            flags = continuation_flags(self.basic_tokenizer.clean_text(text), self._segmenter)
            words = mark_continuations(words, flags)
        pieces: List[str] = []
        for word in words:
            if word in self.basic_tokenizer.never_split:
                pieces.append(word)
            elif _is_marked_cjk(word):
                piece = self.wordpiece_tokenizer.tokenize_word(word[2:])[0]
                pieces.append(piece if piece == self.unk_token else "##" + piece)
            else:
                pieces.extend(self.wordpiece_tokenizer.tokenize_word(word))
        return pieces

    def build_inputs_with_special_tokens(
        self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None
    ) -> List[int]:
        """``[CLS] A [SEP]``, or ``[CLS] A [SEP] B [SEP]`` for a pair."""
        head = [] if self.cls_id is None else [self.cls_id]
        tail = [] if self.sep_id is None else [self.sep_id]
        ids = head + list(token_ids_0) + tail
        return ids if token_ids_1 is None else ids + list(token_ids_1) + tail

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        """Glue ``##`` pieces to the piece before them and adjacent CJK characters to each
        other; separate everything else with one space. (Lower-casing and the original spacing
        around punctuation cannot be recovered.)"""
        text = ""
        previous = ""
        for token in tokens:
            if token.startswith("##") and len(token) > 2 and text:
                text += token[2:]
            elif text and not (_is_single_cjk(previous) and _is_single_cjk(token)):
                text += " " + token
            else:
                text += token
            previous = token
        return text

    def save_vocabulary(self, save_directory: str, filename_prefix: Optional[str] = None) -> Tuple[str, ...]:
        """Write ``save_directory/vocab.txt`` (``PREFIX-vocab.txt`` with a prefix); return
        ``(path,)``."""
        name = (f"{filename_prefix}-" if filename_prefix else "") + VOCAB_TXT
        return (save_wordpiece_vocab(self._vocab, save_directory, name),)


def _is_marked_cjk(token: str) -> bool:
    return len(token) == 3 and token.startswith("##") and is_cjk(token[2])


def _is_single_cjk(token: str) -> bool:
    return len(token) == 1 and is_cjk(token)
