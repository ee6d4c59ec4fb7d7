"""T5 pre-training samples: span corruption with sentinel tokens.

A sample's text is a run of whole sentences of one document, as long as fits the encoder after
corruption. Noise covers ``noise_density`` of it (15%) in spans of mean length
``mean_span_length`` (3). Each span becomes one sentinel in the encoder input; the decoder
learns to emit ``<S0> span0 <S1> span1 ... [EOS]``::

    text     : a b c d e f g h
    encoder  : a b <S0> e f <S1> h [EOS]
    decoder  : [BOS] <S0> c d <S1> g          (decoder_input_ids, shifted right)
    lm_labels: <S0> c d <S1> g [EOS]

Masks are int64 (1 = may attend): ``encoder_attn_mask`` ``[S_enc, S_enc]`` between real encoder
tokens, ``decoder_attn_mask`` ``[S_dec, S_dec]`` causal between real decoder tokens,
``encoder_decoder_attn_mask`` ``[S_dec, S_enc]`` from real decoder to real encoder tokens.
``lm_labels`` is 0 and ``loss_mask`` 0 on padding (0, not -1: OneFlow's sparse cross-entropy
aborts on negative labels).

Sentinel ids come from ``sentinel_ids``, else the tokenizer's ``additional_special_tokens_ids``
or the ids of its ``additional_special_tokens`` (e.g. ``<extra_id_0>`` ...). ``[BOS]``/``[EOS]``
are the tokenizer's ``bos_id``/``eos_id`` when it has them, else ``cls_id``/``sep_id``.
"""
from typing import Any, Optional, Sequence, Union

import numpy as np
import oneflow as flow

from libai.data.data_utils.indexed_dataset import MMapIndexedDataset
from libai.data.data_utils.masking import random_spans_noise_mask, span_corrupt, t5_input_length
from libai.data.data_utils.sentence_dataset import (
    SentenceSampleDataset,
    require_token_ids,
    resolve_num_samples,
)
from libai.data.structures import DistTensorData, Instance

__all__ = ["T5Dataset"]


def _optional_id(tokenizer: Any, name: str, fallback: int) -> int:
    value = getattr(tokenizer, name, None)
    return fallback if value is None else int(value)


class T5Dataset(SentenceSampleDataset):
    """Span-corruption samples with fields ``encoder_input_ids``, ``decoder_input_ids``,
    ``encoder_attn_mask``, ``decoder_attn_mask``, ``encoder_decoder_attn_mask``, ``lm_labels``,
    ``loss_mask`` (see module doc).

    Args:
        max_seq_length: encoder length (padded).
        max_seq_length_dec: decoder length (padded); default the longest target the encoder
            length can produce. A smaller value that cannot hold it is an error.
        noise_density, mean_span_length: the corruption (T5: 0.15 and 3); LiBai's configs name
            the density ``masked_lm_prob``.
        num_samples / max_num_samples: samples wanted (LiBai's spelling ``max_num_samples``).
        sentinel_ids: ids of the sentinel tokens, in order; at least as many as spans.
        other arguments: as for :class:`~libai.data.datasets.bert_dataset.BertDataset`.
    """

    kind = "t5"

    def __init__(
        self,
        name: str = "t5",
        tokenizer: Any = None,
        indexed_dataset: Optional[MMapIndexedDataset] = None,
        data_prefix: Optional[str] = None,
        max_num_samples: Optional[int] = None,
        masked_lm_prob: Optional[float] = None,
        max_seq_length: int = 512,
        max_seq_length_dec: Optional[int] = None,
        short_seq_prob: float = 0.1,
        seed: int = 1234,
        num_samples: Optional[int] = None,
        noise_density: float = 0.15,
        mean_span_length: float = 3.0,
        sentinel_ids: Optional[Sequence[int]] = None,
        split: Union[str, int] = "train",
        splits_string: Union[str, Sequence[float]] = "949,50,1",
        cache_dir: Optional[str] = None,
    ) -> None:
        num_samples = resolve_num_samples(num_samples, max_num_samples, "T5Dataset")
        if masked_lm_prob is not None:  # LiBai's name for the noise density
            if noise_density != 0.15 and float(noise_density) != float(masked_lm_prob):
                raise ValueError(f"T5Dataset: noise_density={noise_density} and masked_lm_prob="
                                 f"{masked_lm_prob} set the same thing; keep one of them")
            noise_density = masked_lm_prob
        ids = require_token_ids(tokenizer, ("cls_id", "sep_id", "pad_id"), "T5Dataset")
        self.pad_id = ids["pad_id"]
        self.bos_id = _optional_id(tokenizer, "bos_id", ids["cls_id"])
        self.eos_id = _optional_id(tokenizer, "eos_id", ids["sep_id"])
        self.noise_density, self.mean_span_length = float(noise_density), float(mean_span_length)
        self.max_seq_length = int(max_seq_length)
        raw_length, needed_dec, max_spans = t5_input_length(
            self.max_seq_length, self.noise_density, self.mean_span_length
        )
        if max_seq_length_dec is None:
            max_seq_length_dec = needed_dec
        if max_seq_length_dec < needed_dec:
            raise ValueError(
                f"max_seq_length_dec={max_seq_length_dec} cannot hold the {needed_dec} target tokens that "
                f"max_seq_length={max_seq_length} may produce; raise it to {needed_dec} or lower max_seq_length"
            )
        self.max_seq_length_dec = int(max_seq_length_dec)
        self.sentinel_ids = self._resolve_sentinels(tokenizer, sentinel_ids, max_spans)
        self._setup(
            name, data_prefix, indexed_dataset, split, splits_string, cache_dir, raw_length,
            num_samples, seed, short_seq_prob, min_sentences=1,
        )

    def _resolve_sentinels(self, tokenizer: Any, sentinel_ids: Optional[Sequence[int]], max_spans: int) -> list:
        if sentinel_ids is None:
            sentinel_ids = getattr(tokenizer, "additional_special_tokens_ids", None)
        if sentinel_ids is None and getattr(tokenizer, "additional_special_tokens", None):
            sentinel_ids = tokenizer.convert_tokens_to_ids(list(tokenizer.additional_special_tokens))
        if not sentinel_ids:
            raise ValueError(
                "T5Dataset needs sentinel token ids: pass sentinel_ids=[...] or use a tokenizer with "
                "additional_special_tokens (e.g. <extra_id_0> ... <extra_id_99>)"
            )
        if len(sentinel_ids) < max_spans:
            raise ValueError(
                f"{len(sentinel_ids)} sentinel ids, but max_seq_length={self.max_seq_length} can need up "
                f"to {max_spans} spans; give more sentinels or a shorter max_seq_length"
            )
        return [int(s) for s in sentinel_ids]

    def __getitem__(self, idx: int) -> Instance:
        rng = self.sample_rng(idx)
        first, end, target = self.row(idx)
        tokens = np.concatenate(self.sentences(first, end))[:target]
        if len(tokens) >= 2:
            noise = random_spans_noise_mask(len(tokens), self.noise_density, self.mean_span_length, rng)
        else:
            noise = np.zeros(len(tokens), dtype=bool)
        encoder, target_ids = span_corrupt(tokens, noise, self.sentinel_ids)
        encoder = np.concatenate([encoder, [self.eos_id]])
        decoder_in = np.concatenate([[self.bos_id], target_ids])
        labels = np.concatenate([target_ids, [self.eos_id]])
        return self._pack(encoder, decoder_in, labels)

    def _pack(self, encoder: np.ndarray, decoder_in: np.ndarray, labels: np.ndarray) -> Instance:
        s_enc, s_dec = self.max_seq_length, self.max_seq_length_dec
        enc_real = np.arange(s_enc) < len(encoder)
        dec_real = np.arange(s_dec) < len(decoder_in)

        def padded(values: np.ndarray, size: int, fill: int) -> np.ndarray:
            out = np.full(size, fill, dtype=np.int64)
            out[: len(values)] = values
            return out

        causal = np.tril(np.ones((s_dec, s_dec), dtype=bool))
        fields = {
            "encoder_input_ids": padded(encoder, s_enc, self.pad_id),
            "decoder_input_ids": padded(decoder_in, s_dec, self.pad_id),
            "encoder_attn_mask": np.outer(enc_real, enc_real),
            "decoder_attn_mask": np.outer(dec_real, dec_real) & causal,
            "encoder_decoder_attn_mask": np.outer(dec_real, enc_real),
            "lm_labels": padded(labels, s_dec, 0),
            "loss_mask": dec_real,
        }
        out = Instance()
        for name, value in fields.items():
            tensor = flow.tensor(np.asarray(value, dtype=np.int64), dtype=flow.long)
            last_stage = name in ("lm_labels", "loss_mask")
            out.set(name, DistTensorData(tensor, placement_idx=-1 if last_stage else 0))
        return out
