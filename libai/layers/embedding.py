"""Embedding tables: ``VocabEmbedding`` (vocabulary split over tensor parallel ranks),
``Embedding`` (replicated) and the fixed ``SinePositionalEmbedding``.

A word-embedding table is usually the largest parameter of a language model, so
``VocabEmbedding`` splits its rows over the tensor-parallel ranks. A lookup then happens on
every rank against its own rows (ids outside them contribute zeros), giving a partial sum that
is converted to broadcast: one all-reduce of the ``[batch, seq, hidden]`` output. The same
table, split the same way, gives the LM head its vocabulary-split logits (:class:`LMLogits`).
"""
import math
from typing import Any, Callable, Optional

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.layers.utils import broadcast, make_parameter, place_constant, split, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["VocabEmbedding", "Embedding", "SinePositionalEmbedding", "sinusoid_table"]


def _padded_init(
    init_method: Callable[[flow.Tensor], Any], padding_idx: Optional[int]
) -> Callable[[flow.Tensor], Any]:
    """``init_method`` followed by zeroing the padding row (before the table is split)."""

    def init(weight: flow.Tensor) -> None:
        init_method(weight)
        if padding_idx is not None:
            weight[padding_idx] = 0.0

    return init


def _check_padding_idx(padding_idx: Optional[int], num_embeddings: int) -> Optional[int]:
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(
            f"padding_idx={padding_idx} is outside the table of {num_embeddings} embeddings"
        )
    return padding_idx % num_embeddings


class _EmbeddingBase(nn.Module):
    """Shared lookup: ids (any shape) -> ``[*ids.shape, embedding_dim]``.

    The two public tables differ only in how the weight is laid out over the tensor-parallel
    ranks (``_tensor_sbp``) and what sizes that layout accepts (``_check_size``); both take the
    arguments documented on :class:`VocabEmbedding`.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        init_method: Callable[[flow.Tensor], Any] = nn.init.xavier_normal_,
        padding_idx: Optional[int] = None,
        *,
        layer_idx: int = 0,
        dtype: flow.dtype = flow.float32,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__()
        self.layout = current_layout()
        self._check_size(num_embeddings)
        self.layer_idx = layer_idx
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings)
        self.amp_enabled = amp_enabled
        self.weight = make_parameter(
            (num_embeddings, embedding_dim),
            _padded_init(init_method, self.padding_idx),
            self.layout,
            layer_idx,
            self._tensor_sbp(),
            dtype,
        )

    def _check_size(self, num_embeddings: int) -> None:
        """Raise if the layout cannot hold ``num_embeddings`` rows (here any size works)."""

    def _tensor_sbp(self) -> Any:
        return None

    def forward(self, input_ids: flow.Tensor) -> flow.Tensor:
        ids = to_sbp(input_ids, self.layout, self.layer_idx, tensor_sbp=broadcast())
        out = flow._C.gather(self.weight, ids, axis=0)
        # a split table gives partial sums; every rank needs the full embedding
        return to_sbp(out, self.layout, self.layer_idx, tensor_sbp=broadcast())

    def extra_repr(self) -> str:
        return (
            f"{self.num_embeddings}, {self.embedding_dim}, padding_idx={self.padding_idx}, "
            f"layer_idx={self.layer_idx}"
        )


class VocabEmbedding(_EmbeddingBase):
    """Word embeddings with the vocabulary (rows) split over tensor-parallel ranks.

    Args:
        num_embeddings: vocabulary size (must be divisible by the tensor parallel size; pad
            the vocabulary, e.g. to a multiple of 128, if it is not).
        embedding_dim: hidden size.
        init_method: fills the full ``[vocab, hidden]`` table in place.
        padding_idx: a row initialised to zero (its gradient is not masked).
        layer_idx: pipeline position, normally 0 (keyword only).
        dtype: the weight's dtype (keyword only).
        amp_enabled: accepted for LiBai config compatibility; mixed precision itself is
            applied by the engine (graph AMP or autocast), not by the layer.
    """

    def _check_size(self, num_embeddings: int) -> None:
        tp = self.layout.tensor_parallel_size
        if num_embeddings % tp:
            raise ValueError(
                f"VocabEmbedding splits num_embeddings={num_embeddings} over "
                f"tensor_parallel_size={tp}, which does not divide it; pad the vocabulary to a "
                f"multiple of {tp}"
            )

    def _tensor_sbp(self) -> Any:
        return split(0)


class Embedding(_EmbeddingBase):
    """A replicated embedding table (positions, token types, small vocabularies).

    Same arguments as :class:`VocabEmbedding`; any size works.
    """


def sinusoid_table(num_positions: int, dim: int) -> np.ndarray:
    """The fixed position code of "Attention Is All You Need": even columns ``sin(p / 10000^(i/d))``,
    odd columns the matching ``cos`` (float32 ``[num_positions, dim]``)."""
    position = np.arange(num_positions, dtype=np.float64)[:, None]
    inv_freq = np.exp(np.arange(0, dim, 2, dtype=np.float64) * (-math.log(10000.0) / dim))
    table = np.zeros((num_positions, dim), dtype=np.float64)
    table[:, 0::2] = np.sin(position * inv_freq)
    table[:, 1::2] = np.cos(position * inv_freq)[:, : dim // 2]
    return table.astype(np.float32)


class SinePositionalEmbedding(nn.Module):
    """Fixed (not learned) sinusoidal position embeddings, looked up by position id.

    The table is a buffer, replicated on the stage of ``layer_idx``, so it is saved with the
    model but never trained. ``forward(position_ids)`` -> ``[*position_ids.shape, embedding_dim]``.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, *, layer_idx: int = 0) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        table = flow.tensor(sinusoid_table(num_embeddings, embedding_dim))
        self.register_buffer(
            "position_embedding", place_constant(table, self.layout, layer_idx)
        )

    def forward(self, position_ids: flow.Tensor) -> flow.Tensor:
        ids = to_sbp(position_ids, self.layout, self.layer_idx, tensor_sbp=broadcast())
        return flow._C.gather(self.position_embedding, ids, axis=0)

    def extra_repr(self) -> str:
        return f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}"
