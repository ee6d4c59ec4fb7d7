"""RoBERTa's tokenizer: GPT-2's byte-level BPE with BERT-like special tokens.

RoBERTa reuses GPT-2's vocabulary files and algorithm unchanged; only the special tokens
differ: ``<s>`` opens a sequence (it is also the classification token), ``</s>`` closes it
(and separates two), and ``<pad>``, ``<unk>``, ``<mask>`` have their own ids (in RoBERTa's
published vocabulary: ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3, ``<mask>`` last).
"""
from typing import Any, List, Optional

from libai.tokenizer.gpt2 import VOCAB_FILES_NAMES, GPT2Tokenizer

__all__ = ["RobertaTokenizer", "VOCAB_FILES_NAMES"]

_PUBLISHED = ("roberta-base", "roberta-large", "roberta-large-mnli")


class RobertaTokenizer(GPT2Tokenizer):
    """Byte-level BPE over ``vocab.json`` + ``merges.txt`` with RoBERTa's special tokens.

    With special tokens (``encode(text, add_special_tokens=True)``, or every ``encode`` of a
    tokenizer built with ``add_bos_token=True``) one text becomes ``<s> A </s>`` and a pair
    ``<s> A </s></s> B </s>``, RoBERTa's layout.

    Args:
        vocab_file, merges_file, errors: as for :class:`~libai.tokenizer.GPT2Tokenizer`.
        bos_token, eos_token, sep_token, cls_token, unk_token, pad_token, mask_token: the
            special tokens; missing ones get the next free ids.
        **kwargs: ``additional_special_tokens``, ``add_bos_token``, ``model_max_length``,
            ``padding_side`` (see :class:`~libai.tokenizer.base.BaseTokenizer`).
    """

    pretrained_vocab_files_map = {
        key: {name: f"https://huggingface.co/{name}/resolve/main/{file}" for name in _PUBLISHED}
        for key, file in VOCAB_FILES_NAMES.items()
    }
    max_model_input_sizes = {name: 512 for name in _PUBLISHED}

    def __init__(
        self,
        vocab_file: str,
        merges_file: str,
        errors: str = "replace",
        bos_token: Optional[str] = "<s>",
        eos_token: Optional[str] = "</s>",
        sep_token: Optional[str] = "</s>",
        cls_token: Optional[str] = "<s>",
        unk_token: Optional[str] = "<unk>",
        pad_token: Optional[str] = "<pad>",
        mask_token: Optional[str] = "<mask>",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            vocab_file,
            merges_file,
            errors=errors,
            bos_token=bos_token,
            eos_token=eos_token,
            sep_token=sep_token,
            cls_token=cls_token,
            unk_token=unk_token,
            pad_token=pad_token,
            mask_token=mask_token,
            **kwargs,
        )

    def build_inputs_with_special_tokens(
        self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None
    ) -> List[int]:
        """``<s> A </s>``; for a pair ``<s> A </s></s> B </s>``."""
        cls = [] if self.cls_token_id is None else [self.cls_token_id]
        sep = [] if self.sep_token_id is None else [self.sep_token_id]
        ids = cls + list(token_ids_0) + sep
        return ids if token_ids_1 is None else ids + sep + list(token_ids_1) + sep

    def create_token_type_ids_from_sequences(
        self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None
    ) -> List[int]:
        """All zeros, as long as the wrapped input: RoBERTa has no segment embeddings."""
        return [0] * len(self._wrap(list(token_ids_0), None if token_ids_1 is None else list(token_ids_1)))
