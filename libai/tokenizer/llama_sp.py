"""Llama-2's SentencePiece ``tokenizer.model`` behind libai's tokenizer interface.

Llama-2 ships a SentencePiece BPE model with byte fallback (characters outside the vocabulary
become ``<0xNN>`` byte pieces) and a ``tokenizer_config.json`` naming ``LlamaTokenizer``. The
``sentencepiece`` package does the segmentation; this class adds what the Hugging Face
``LlamaTokenizer`` adds around it in its *legacy* mode (the mode Llama-2's files select):

- special tokens (``<s>``, ``</s>``, ``<unk>``, added ones) are cut out of the text first, and
  every piece of text between them is encoded on its own, each starting a new word (a "▁" is
  prefixed by SentencePiece's dummy-prefix rule);
- ``<s>`` is put in front (``add_bos_token``, default True) and ``</s>`` at the end
  (``add_eos_token``, default False);
- ``decode`` joins SentencePiece's decoding of each run of pieces with the special tokens'
  text, a space before a special token that follows text.
"""
import os
from typing import Any, Dict, List, Optional, Tuple

import sentencepiece as spm

from libai.tokenizer.base import BaseTokenizer
from libai.tokenizer.encoding import _as_id_list
from libai.tokenizer.hf_config import added_tokens, tokenizer_arguments

__all__ = ["LlamaSentencePieceTokenizer"]

MODEL_FILE = "tokenizer.model"


class LlamaSentencePieceTokenizer(BaseTokenizer):
    """Llama-2's tokenizer from ``tokenizer.model`` (legacy spacing; see the module docstring).

    Args:
        vocab_file: path of ``tokenizer.model``.
        add_bos_token / add_eos_token: what ``encode`` puts around the ids by default (the
            Llama meaning of these flags, as tokenizer_config.json gives them).
        legacy: only the legacy behaviour (True, Llama-2's) is implemented; False is refused.
        **kwargs: special tokens (default ``<unk>``, ``<s>``, ``</s>``), ``padding_side``,
            ``chat_template`` ... (:class:`~libai.tokenizer.base.BaseTokenizer`).
    """

    vocab_files_names = {"vocab_file": MODEL_FILE}

    def __init__(self, vocab_file: str, *, add_bos_token: bool = True, add_eos_token: bool = False,
                 legacy: Optional[bool] = True, clean_up_tokenization_spaces: bool = False,
                 **kwargs: Any) -> None:
        if legacy is False:
            raise ValueError(
                "tokenizer_config.json sets legacy=false (no word start after special tokens); "
                "libai implements LlamaTokenizer's legacy=true spacing only. Set \"legacy\": true "
                "to accept the legacy ids, or ship a tokenizer.json instead")
        if not os.path.isfile(vocab_file):
            raise FileNotFoundError(f"no SentencePiece model at {vocab_file!r}")
        self.vocab_file = vocab_file
        self.sp_model = spm.SentencePieceProcessor(model_file=os.fspath(vocab_file))
        self.add_bos, self.add_eos = bool(add_bos_token), bool(add_eos_token)
        self.clean_up_tokenization_spaces = bool(clean_up_tokenization_spaces)
        kwargs.setdefault("unk_token", "<unk>")
        kwargs.setdefault("bos_token", "<s>")
        kwargs.setdefault("eos_token", "</s>")
        super().__init__(add_bos_token=True, **kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str, *init_inputs: Any,
                        **kwargs: Any) -> "LlamaSentencePieceTokenizer":
        """Read ``tokenizer.model`` and tokenizer_config.json (special tokens, ``add_bos_token``,
        ``add_eos_token``, ``legacy``, chat template, tokens added after the model's pieces)
        from a directory; ``kwargs`` override them."""
        directory = os.fspath(pretrained_model_name_or_path)
        path = os.path.join(directory, MODEL_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no {MODEL_FILE} in {directory}")
        arguments = tokenizer_arguments(directory)
        config = arguments.pop("_config")
        for key in ("add_bos_token", "add_eos_token", "legacy"):
            if key in config:
                arguments[key] = config[key]
        arguments.update(kwargs)
        tokenizer = cls(path, **arguments)
        for index, token, special in added_tokens(config):
            if index >= len(tokenizer) and token is not None:
                tokenizer.add_tokens([token], special_tokens=special)
        return tokenizer

    @property
    def vocab_size(self) -> int:
        return self.sp_model.get_piece_size()

    def _base_id(self, token: str) -> Optional[int]:
        index = self.sp_model.piece_to_id(token)
        return index if self.sp_model.id_to_piece(index) == token else None

    def _convert_id_to_token(self, index: int) -> str:
        return self.sp_model.id_to_piece(index)

    def _base_vocab(self) -> Dict[str, int]:
        return {self.sp_model.id_to_piece(i): i for i in range(self.vocab_size)}

    def tokenize(self, text: str, **kwargs: Any) -> List[str]:
        """Pieces of ``text``; special tokens are cut out with the spaces around them kept
        (each chunk between them then starts a word, LlamaTokenizer's legacy rule)."""
        if not isinstance(text, str):
            raise TypeError(f"tokenize() takes a str, got {type(text).__name__}")
        tokens: List[str] = []
        for piece, is_added in self._no_split.split(text, strip=False):
            tokens.extend([piece] if is_added else self._tokenize(piece))
        return tokens

    def _tokenize(self, text: str) -> List[str]:
        return self.sp_model.encode(text, out_type=str)

    def build_inputs_with_special_tokens(self, token_ids_0: List[int],
                                         token_ids_1: Optional[List[int]] = None) -> List[int]:
        bos = [self.bos_token_id] if self.add_bos and self.bos_token_id is not None else []
        eos = [self.eos_token_id] if self.add_eos and self.eos_token_id is not None else []
        out = bos + list(token_ids_0) + eos
        if token_ids_1 is not None:
            out += bos + list(token_ids_1) + eos
        return out

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        return self.sp_model.decode_pieces(list(tokens))

    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **_: Any) -> str:
        """Ids -> text: SentencePiece decodes each run of ordinary pieces (bytes included);
        special tokens stand for their text, with a space before one that follows text."""
        tokens = self.convert_ids_to_tokens(_as_id_list(token_ids), skip_special_tokens)
        specials = set(self.all_special_tokens) | set(self.get_added_vocab())
        out, run, previous_special = "", [], False
        for i, token in enumerate(tokens):
            if token in specials:
                if not previous_special and i != 0:
                    out += " "
                out += self.sp_model.decode_pieces(run) + token
                run, previous_special = [], True
            else:
                run.append(token)
                previous_special = False
        return out + self.sp_model.decode_pieces(run)

    def save_vocabulary(self, save_directory: str, filename_prefix: Optional[str] = None) -> Tuple[str, ...]:
        os.makedirs(save_directory, exist_ok=True)
        name = f"{filename_prefix}-{MODEL_FILE}" if filename_prefix else MODEL_FILE
        path = os.path.join(save_directory, name)
        with open(path, "wb") as handle:
            handle.write(self.sp_model.serialized_model_proto())
        return (path,)
