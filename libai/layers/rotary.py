"""``RotaryEmbedding``: rotary position embeddings (RoPE) applied to queries and keys.

Each head's ``head_size`` features are read as ``head_size / 2`` pairs, and pair ``i`` of the
token at position ``p`` is rotated by the angle ``p * base^(-2i / head_size)``. The pairs follow
Hugging Face Llama's "rotate_half" convention: feature ``i`` is paired with feature
``i + head_size / 2`` (first half with second half), not with its neighbour. That is the layout
of every Hugging Face Llama-family checkpoint, so their q/k projection weights load unchanged::

    rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2])
    x' = x * cos(p θ) + rotate_half(x) * sin(p θ)      with θ repeated over both halves

The cos/sin tables are constants: computed once (in float32) for ``max_position_embeddings``
positions, placed broadcast on the layer's stage, and extended when a longer sequence arrives.
Rotation is element-wise over the last dim, so it applies unchanged to global tensors whose
heads are split over tensor-parallel ranks. The tables follow the queries' placement, so one
module may be shared by blocks on different pipeline stages; local queries and keys of a
one-process run (attention's local stretch) are rotated by the tables' local values.
"""
from typing import Tuple

import oneflow as flow
from oneflow import nn

from libai.layers.utils import adopt_local, place_constant
from libai.utils.distributed import current_layout

__all__ = ["RotaryEmbedding", "rotate_half"]


def rotate_half(x: flow.Tensor) -> flow.Tensor:
    """``[x1, x2] -> [-x2, x1]`` over the last dim (halves, Hugging Face's convention)."""
    half = x.shape[-1] // 2
    return flow.cat([-x[..., half:], x[..., :half]], dim=-1)


class RotaryEmbedding(nn.Module):
    """Rotate queries and keys ``[batch, heads, seq, head_size]`` by their positions.

    Args:
        head_size: features per head (even).
        max_position_embeddings: positions tabulated up front; longer inputs extend the table.
        base: the frequency base (10000 in Llama; some checkpoints set ``rope_theta``).
        layer_idx: pipeline position of the attention using it (where the tables live).

    The module has no parameters and no state-dict entries.
    """

    def __init__(
        self,
        head_size: int,
        max_position_embeddings: int = 2048,
        base: float = 10000.0,
        *,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        if head_size % 2:
            raise ValueError(
                f"RotaryEmbedding needs an even head_size (features are rotated in pairs); "
                f"got {head_size}"
            )
        self.head_size = head_size
        self.max_position_embeddings = max_position_embeddings
        self.base = float(base)
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self._cos, self._sin = self._tables(max_position_embeddings)

    def _tables(self, length: int) -> Tuple[flow.Tensor, flow.Tensor]:
        """cos and the signed sin ``[length, head_size]``, float32, placed for this layer.

        The sin table's first half is negated: ``rotate_half(x) * sin`` is then
        ``roll(x, head_size / 2) * signed_sin``, one roll instead of two slices, a negation and
        a concatenation (forward and backward; global tensors copy at each of them)."""
        exponents = flow.arange(0, self.head_size, 2, dtype=flow.int64).to(flow.float32)
        inv_freq = 1.0 / (self.base ** (exponents / self.head_size))
        positions = flow.arange(length, dtype=flow.int64).to(flow.float32)
        angles = positions.unsqueeze(1) * inv_freq.unsqueeze(0)  # [length, head_size / 2]
        angles = flow.cat([angles, angles], dim=-1)
        place = lambda t: place_constant(t, self.layout, self.layer_idx)  # noqa: E731
        sin = flow.sin(angles)
        signed_sin = flow.cat([-sin[:, : self.head_size // 2], sin[:, self.head_size // 2:]], dim=-1)
        return place(flow.cos(angles)), place(signed_sin)

    def forward(
        self, query: flow.Tensor, key: flow.Tensor, position_offset: int = 0
    ) -> Tuple[flow.Tensor, flow.Tensor]:
        """``(query, key)`` rotated; position ``position_offset + j`` for sequence index ``j``.

        ``position_offset`` is the number of tokens already in the key/value cache. Query and
        key may have different lengths only if both start at ``position_offset``.
        """
        if query.is_global or key.is_global:
            query = adopt_local(query, self.layout, self.layer_idx)
            key = adopt_local(key, self.layout, self.layer_idx)
        seq = max(int(query.shape[2]), int(key.shape[2]))
        end = position_offset + seq
        if end > int(self._cos.shape[0]):
            self._cos, self._sin = self._tables(max(end, 2 * int(self._cos.shape[0])))
        cos, sin = self._cos, self._sin
        if query.is_global and cos.placement != query.placement:
            # one module may serve blocks on several stages: follow the queries
            cos = cos.to_global(placement=query.placement)
            sin = sin.to_global(placement=query.placement)
        elif not query.is_global and cos.is_global:
            # local queries and keys of a one-process run's global layout (attention's local
            # stretch, OneProcessLocal): the tables' local values are the whole tables
            cos, sin = cos.to_local(), sin.to_local()
        # the rows of the longer of the two, sliced once (a decoding step: one row for both)
        cos, sin = cos[position_offset:end], sin[position_offset:end]
        return self._rotate(query, cos, sin, seq), self._rotate(key, cos, sin, seq)

    @staticmethod
    def _rotate(x: flow.Tensor, cos: flow.Tensor, sin: flow.Tensor, seq: int) -> flow.Tensor:
        """``x * cos + rotate_half(x) * sin``, with ``sin`` the signed table (see _tables)."""
        length = int(x.shape[2])
        if length != seq:
            cos, sin = cos[:length], sin[:length]
        if cos.dtype != x.dtype:
            cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        # roll along the last dim, named by its positive index: OneFlow 0.9's roll with dims=-1
        # rolls the flattened tensor
        return x * cos + flow.roll(x, x.shape[-1] // 2, dims=x.ndim - 1) * sin

    def extra_repr(self) -> str:
        return (
            f"head_size={self.head_size}, max_position_embeddings="
            f"{self.max_position_embeddings}, base={self.base}, layer_idx={self.layer_idx}"
        )
