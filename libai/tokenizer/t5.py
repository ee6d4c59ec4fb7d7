"""T5's tokenizer: a SentencePiece model (``spiece.model``) plus sentinel tokens.

SentencePiece cuts raw text into pieces, marking the start of each word with ``▁`` (U+2581),
so its pieces carry their spaces and decoding restores the text. T5 adds ``extra_ids``
sentinel tokens for span corruption, ``<extra_id_0>`` ... ``<extra_id_{n-1}>``, at the *end*
of the vocabulary and counted backwards: ``<extra_id_0>`` is the last id. They are part of
``vocab_size``, as in T5's published checkpoints; other added tokens come after them.
"""
import os
import re
import shutil
from typing import Any, Dict, List, Optional, Sequence, Tuple

from libai.tokenizer.base import BaseTokenizer

__all__ = ["T5Tokenizer", "VOCAB_FILES_NAMES"]

VOCAB_FILES_NAMES = {"vocab_file": "spiece.model"}
_SENTINEL = re.compile(r"<extra_id_(\d+)>\Z")


def _load_processor(vocab_file: Optional[str] = None, proto: Optional[bytes] = None) -> Any:
    import sentencepiece  # a declared dependency, imported only by the tokenizer that needs it

    processor = sentencepiece.SentencePieceProcessor()
    if proto is not None:
        processor.LoadFromSerializedProto(proto)
        return processor
    if vocab_file is None or not os.path.isfile(vocab_file):
        raise FileNotFoundError(
            f"SentencePiece model not found: {vocab_file!r}. T5Tokenizer needs the "
            "spiece.model of the checkpoint, or one trained with sentencepiece's "
            "SentencePieceTrainer (see docs/tokenizers.md)"
        )
    processor.Load(vocab_file)
    return processor


class T5Tokenizer(BaseTokenizer):
    """SentencePiece tokenizer with T5's special tokens and sentinels.

    Args:
        vocab_file: path of the SentencePiece model (``spiece.model``).
        eos_token, unk_token, pad_token: T5's ``</s>``, ``<unk>``, ``<pad>``; a token the
            model lacks gets the next free id after the sentinels.
        extra_ids: how many ``<extra_id_N>`` sentinels to append (T5: 100).
        additional_special_tokens: more special tokens; when given together with
            ``extra_ids``, it must already hold exactly ``extra_ids`` sentinels.
        add_bos_token: LiBai's name for "``encode`` appends ``eos_token``" (T5 ends every
            sequence with ``</s>``); False by default, as in LiBai. ``encode(text,
            add_special_tokens=True)`` appends it for one call.
        **kwargs: ``model_max_length``, ``padding_side``, ... (see :class:`BaseTokenizer`).
    """

    vocab_files_names = VOCAB_FILES_NAMES
    pretrained_vocab_files_map = {
        "vocab_file": {"t5-base": "https://huggingface.co/t5-base/resolve/main/spiece.model"}
    }
    max_model_input_sizes = {"t5-base": 512}
    default_eod_role = "eos"
    spaces_between_special_tokens = True  # pieces around an added token lose their edge space
    clean_up_tokenization_spaces = False

    def __init__(
        self,
        vocab_file: str,
        eos_token: Optional[str] = "</s>",
        unk_token: Optional[str] = "<unk>",
        pad_token: Optional[str] = "<pad>",
        extra_ids: int = 100,
        additional_special_tokens: Optional[Sequence[str]] = None,
        add_bos_token: bool = False,
        **kwargs: Any,
    ) -> None:
        if isinstance(extra_ids, bool) or not isinstance(extra_ids, int) or extra_ids < 0:
            raise ValueError(f"extra_ids must be an int >= 0, got {extra_ids!r}")
        if extra_ids > 0 and additional_special_tokens is None:
            additional_special_tokens = [f"<extra_id_{i}>" for i in range(extra_ids)]
        elif extra_ids > 0:
            sentinels = {t for t in additional_special_tokens if "extra_id" in str(t)}
            if len(sentinels) != extra_ids:
                raise ValueError(
                    f"T5Tokenizer got extra_ids={extra_ids} and additional_special_tokens with "
                    f"{len(sentinels)} <extra_id_N> tokens; when both are given the list must hold "
                    f"all {extra_ids} sentinels (or pass extra_ids=0)"
                )
        self.vocab_file = vocab_file
        self._extra_ids = extra_ids
        self.sp_model = _load_processor(vocab_file)
        self._vocab_cache: Optional[Dict[str, int]] = None
        super().__init__(
            eos_token=eos_token,
            unk_token=unk_token,
            pad_token=pad_token,
            additional_special_tokens=additional_special_tokens,
            add_bos_token=add_bos_token,
            **kwargs,
        )

    # -- vocabulary ----------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """SentencePiece pieces plus the ``extra_ids`` sentinels."""
        return self.sp_model.get_piece_size() + self._extra_ids

    def _base_id(self, token: str) -> Optional[int]:
        sentinel = _SENTINEL.match(token)
        if sentinel is not None:
            number = int(sentinel.group(1))
            return self.vocab_size - 1 - number if number < self._extra_ids else None
        index = self.sp_model.piece_to_id(token)
        if index == self.sp_model.unk_id() and token != self.sp_model.id_to_piece(index):
            return None
        return index

    def _convert_id_to_token(self, index: int) -> str:
        pieces = self.sp_model.get_piece_size()
        return self.sp_model.id_to_piece(index) if index < pieces else f"<extra_id_{self.vocab_size - 1 - index}>"

    def _base_vocab(self) -> Dict[str, int]:
        if self._vocab_cache is None:
            self._vocab_cache = {self._convert_id_to_token(i): i for i in range(self.vocab_size)}
        return self._vocab_cache

    # -- tokenization --------------------------------------------------------------------------
    def _tokenize(self, text: str) -> List[str]:
        return self.sp_model.encode(text, out_type=str)

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        """SentencePiece's own decoding: ``▁`` becomes a space, the leading one is dropped."""
        return self.sp_model.decode_pieces(list(tokens))

    def build_inputs_with_special_tokens(
        self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None
    ) -> List[int]:
        """``A </s>``, or ``A </s> B </s>`` for a pair (no second ``</s>`` if already there)."""
        ids = self._with_eos(list(token_ids_0))
        return ids if token_ids_1 is None else ids + self._with_eos(list(token_ids_1))

    def _with_eos(self, ids: List[int]) -> List[int]:
        eos = self.eos_token_id
        if eos is None or (ids and ids[-1] == eos):
            return ids
        return ids + [eos]

    def save_vocabulary(self, save_directory: str, filename_prefix: Optional[str] = None) -> Tuple[str, ...]:
        """Write the SentencePiece model as ``save_directory/spiece.model``; return ``(path,)``."""
        os.makedirs(save_directory, exist_ok=True)
        name = (f"{filename_prefix}-" if filename_prefix else "") + VOCAB_FILES_NAMES["vocab_file"]
        path = os.path.join(save_directory, name)
        if os.path.isfile(self.vocab_file):
            if os.path.abspath(self.vocab_file) != os.path.abspath(path):
                shutil.copyfile(self.vocab_file, path)
        else:  # the file moved since loading: write the model we hold
            with open(path, "wb") as handle:
                handle.write(self.sp_model.serialized_model_proto())
        return (path,)

    # SentencePieceProcessor is a C++ object: pickle the model's bytes instead.
    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["sp_model"] = self.sp_model.serialized_model_proto()
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.sp_model = _load_processor(proto=state["sp_model"])
