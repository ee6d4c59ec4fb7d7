"""BERT's tokenizer: basic word splitting, then WordPiece, over a ``vocab.txt``."""
from typing import Any, Dict, Iterable, List, Optional, Tuple

from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.chinese_wwm import (
    Segmenter,
    continuation_flags,
    default_segmenter,
    mark_continuations,
)
from libai.tokenizer.unicode_chars import is_cjk
from libai.tokenizer.vocab_files import load_wordpiece_vocab, save_wordpiece_vocab
from libai.tokenizer.wordpiece import BasicTokenizer, WordpieceTokenizer

__all__ = ["BertTokenizer"]


class BertTokenizer(BaseTokenizer):
    """WordPiece tokenizer for BERT-style models, from a ``vocab.txt`` (one token per line).

    ``encode`` wraps a text as ``[CLS] ... [SEP]``; ``eod_id`` is ``[SEP]``'s id, which is what a
    text pipeline appends between documents.

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
        **kwargs: ``bos_token``, ``eos_token``, ``additional_special_tokens``,
            ``model_max_length``, ``padding_side`` (see :class:`BaseTokenizer`).
    """

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
        **kwargs: Any,
    ) -> None:
        self.vocab_file = vocab_file
        self._vocab: Dict[str, int] = load_wordpiece_vocab(vocab_file)
        self._ids_to_tokens: List[str] = list(self._vocab)  # line order == id order
        self.do_lower_case = do_lower_case
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
    def _base_vocab(self) -> Dict[str, int]:
        return self._vocab

    def _base_token(self, index: int) -> str:
        return self._ids_to_tokens[index]

    def _base_id(self, token: str) -> Optional[int]:
        if self.do_chinese_wwm and _is_marked_cjk(token) and token[2:] in self._vocab:
            return self._vocab[token[2:]]  # a whole-word mark keeps the character's id
        return self._vocab.get(token)

    @property
    def vocab(self) -> Dict[str, int]:
        """The ``vocab.txt`` contents, token -> id (a copy)."""
        return dict(self._vocab)

    @property
    def eod_token(self) -> Optional[str]:
        """BERT has no end-of-document token; ``[SEP]`` separates documents."""
        return self.sep_token

    # -- tokenization --------------------------------------------------------------------------
    def _tokenize(self, text: str) -> List[str]:
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

    def build_inputs_with_special_tokens(self, ids: List[int]) -> List[int]:
        """``[CLS] ids [SEP]``."""
        head = [] if self.cls_id is None else [self.cls_id]
        tail = [] if self.sep_id is None else [self.sep_id]
        return head + list(ids) + tail

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

    def save_vocabulary(self, directory: str) -> Tuple[str, ...]:
        """Write ``directory/vocab.txt``; return ``(path,)``."""
        return (save_wordpiece_vocab(self._vocab, directory),)


def _is_marked_cjk(token: str) -> bool:
    return len(token) == 3 and token.startswith("##") and is_cjk(token[2])


def _is_single_cjk(token: str) -> bool:
    return len(token) == 1 and is_cjk(token)
