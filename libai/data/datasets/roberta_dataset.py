"""RoBERTa pre-training samples: masked LM over runs of whole sentences, no pair task.

RoBERTa dropped BERT's next-sentence prediction, so a sample is BERT's single-segment sample
(``binary_head=False`` of :class:`~libai.data.datasets.BertDataset`): ``<s> text </s>`` padded
with the tokenizer's pad id to ``max_seq_length``, 15% of the text tokens picked for
prediction (80% ``<mask>``, 10% random, 10% kept). The only differences are the fields: no
``ns_labels``, and ``tokentype_ids`` all 0 (RoBERTa has one token type). Labels follow
BERT's convention: ``lm_labels`` is the original id at picked positions and 0 elsewhere,
``loss_mask`` is 1 exactly at picked positions.
"""
from typing import Any, Optional, Sequence, Union

import numpy as np

from libai.data.data_utils.indexed_dataset import MMapIndexedDataset
from libai.data.data_utils.sentence_dataset import resolve_num_samples
from libai.data.datasets.bert_dataset import BertDataset
from libai.data.structures import Instance

__all__ = ["RobertaDataset"]


class RobertaDataset(BertDataset):
    """Masked-LM samples with fields ``input_ids``, ``attention_mask``, ``tokentype_ids``,
    ``lm_labels``, ``loss_mask`` (the arguments of :class:`~libai.models.RobertaForPreTraining`).

    Args:
        name, tokenizer, data_prefix / indexed_dataset, max_seq_length, mask_lm_prob,
        short_seq_prob, seed, split, splits_string, cache_dir: as for
            :class:`~libai.data.datasets.BertDataset` (the corpus is made with
            ``--split-sentences``; the tokenizer gives ``cls_id`` (``<s>``), ``sep_id``
            (``</s>``), ``mask_id``, ``pad_id``).
        num_samples / max_num_samples: samples wanted (LiBai's spelling is
            ``max_num_samples``); ``None`` is one pass over the split.
        masking_style: LiBai's option; only ``"bert"`` (the 80/10/10 rule) exists.
    """

    kind = "roberta"

    def __init__(
        self,
        name: str = "roberta",
        tokenizer: Any = None,
        indexed_dataset: Optional[MMapIndexedDataset] = None,
        data_prefix: Optional[str] = None,
        max_num_samples: Optional[int] = None,
        mask_lm_prob: float = 0.15,
        max_seq_length: int = 512,
        short_seq_prob: float = 0.0,
        seed: int = 1234,
        masking_style: str = "bert",
        num_samples: Optional[int] = None,
        split: Union[str, int] = "train",
        splits_string: Union[str, Sequence[float]] = "949,50,1",
        cache_dir: Optional[str] = None,
    ) -> None:
        if masking_style != "bert":
            raise ValueError(f"RobertaDataset(masking_style={masking_style!r}): only 'bert' "
                             "masking (80% <mask>, 10% random, 10% kept) is implemented")
        super().__init__(
            name=name, tokenizer=tokenizer, data_prefix=data_prefix,
            indexed_dataset=indexed_dataset, max_seq_length=max_seq_length,
            num_samples=resolve_num_samples(num_samples, max_num_samples, "RobertaDataset"),
            mask_lm_prob=mask_lm_prob, short_seq_prob=short_seq_prob, binary_head=False,
            seed=seed, split=split, splits_string=splits_string, cache_dir=cache_dir,
        )

    def _pad(self, tokens: np.ndarray, types: np.ndarray, positions: np.ndarray,
             labels: np.ndarray, ns_label: int) -> Instance:
        sample = super()._pad(tokens, np.zeros_like(types), positions, labels, ns_label)
        return Instance(**{k: v for k, v in sample.get_fields().items() if k != "ns_labels"})
