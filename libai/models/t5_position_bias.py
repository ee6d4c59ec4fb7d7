"""T5's relative position bias: one learned scalar per (distance bucket, head), added to the
attention scores instead of position embeddings.

A key at distance ``key_pos - query_pos`` falls in a bucket: small distances get a bucket each,
larger ones share logarithmically wider buckets up to ``max_distance`` (everything beyond lands
in the last bucket). The encoder's bias is bidirectional (half the buckets for keys after the
query); the decoder's is causal (only keys at or before the query have distinct buckets).
Bucketing follows Hugging Face's ``T5Attention._relative_position_bucket`` exactly, including its
float32 logarithm, so Hugging Face checkpoints give the same scores.

As in Hugging Face's T5, the first block of each stack owns the table and its bias is shared by
every block of that stack: :class:`RelativePositionBias` is built with the first block's
``layer_idx`` and its output travels with the hidden states (each attention moves it to its own
stage and splits it over heads under tensor parallelism).
"""
import math
from typing import Any, Callable

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.layers import Embedding
from libai.layers.utils import place_constant
from libai.utils.distributed import current_layout

__all__ = ["RelativePositionBias", "relative_position_bucket"]


def relative_position_bucket(
    relative_position: np.ndarray, bidirectional: bool, num_buckets: int, max_distance: int
) -> np.ndarray:
    """Bucket index (int64) of each ``key_pos - query_pos`` in ``relative_position``."""
    relative_position = np.asarray(relative_position, dtype=np.int64)
    buckets = np.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0).astype(np.int64) * num_buckets
        distance = np.abs(relative_position)
    else:
        distance = -np.minimum(relative_position, 0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    with np.errstate(divide="ignore"):  # log(0) on the small distances, discarded below
        scaled = np.log(distance.astype(np.float32) / np.float32(max_exact))
        scaled = scaled / np.float32(math.log(max_distance / max_exact))
        scaled = scaled * np.float32(num_buckets - max_exact)
    large = max_exact + np.where(is_small, 0, scaled).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(is_small, distance, large)


class RelativePositionBias(nn.Module):
    """``forward(query_length, key_length, past_length) -> [1, heads, query_length, key_length]``.

    Args:
        num_buckets: distance buckets (Hugging Face ``relative_attention_num_buckets``).
        max_distance: distances from which on all share the last bucket
            (``relative_attention_max_distance``).
        num_heads: attention heads (one scalar per bucket and head).
        bidirectional: encoder (True) or causal decoder (False) bucketing.
        init_method: initialiser of the ``[num_buckets, num_heads]`` table.
        layer_idx: the first block of the stack that uses it.
    """

    def __init__(
        self,
        num_buckets: int,
        max_distance: int,
        num_heads: int,
        bidirectional: bool,
        init_method: Callable[[flow.Tensor], Any] = nn.init.xavier_normal_,
        *,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.bidirectional = bidirectional
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.relative_attention_bias = Embedding(
            num_buckets, num_heads, init_method, layer_idx=layer_idx
        )

    def forward(self, query_length: int, key_length: int, past_length: int = 0) -> flow.Tensor:
        """The bias of queries at positions ``past_length ..`` over keys ``0 .. key_length-1``."""
        queries = np.arange(past_length, past_length + query_length, dtype=np.int64)[:, None]
        keys = np.arange(key_length, dtype=np.int64)[None, :]
        buckets = relative_position_bucket(
            keys - queries, self.bidirectional, self.num_buckets, self.max_distance
        )
        ids = place_constant(flow.tensor(buckets), self.layout, self.layer_idx)
        values = self.relative_attention_bias(ids)  # [q, k, heads]
        return values.permute(2, 0, 1).unsqueeze(0)

    def extra_repr(self) -> str:
        return (
            f"num_buckets={self.num_buckets}, max_distance={self.max_distance}, "
            f"bidirectional={self.bidirectional}, layer_idx={self.layer_idx}"
        )
