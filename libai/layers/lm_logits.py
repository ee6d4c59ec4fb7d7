"""``LMLogits``: the language-model head tied to the word embedding.

The head multiplies hidden states by the transposed word-embedding table. Because that table
is split over the vocabulary on tensor-parallel ranks, the logits come out split on their
vocabulary dim, ready for :class:`~libai.layers.ParallelCrossEntropyLoss` without a gather.
Under pipeline parallelism the table lives on the first stage and the head on the last: the
table is moved across for the product and its gradient flows back to the one parameter.
"""
from typing import Optional

import oneflow as flow
from oneflow import nn

from libai.layers.utils import broadcast, make_parameter, split, to_layer, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["LMLogits"]


class LMLogits(nn.Module):
    """``logits = h · Eᵀ (+ b)`` with ``E`` the word embedding passed to ``forward``.

    Args:
        vocab_size: rows of the embedding table (size of the optional bias).
        bias: learn a per-token bias (split like the vocabulary).
        layer_idx: pipeline position, normally ``-1``.
    """

    def __init__(self, vocab_size: int, bias: bool = False, *, layer_idx: int = -1) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.vocab_size = vocab_size
        self.bias: Optional[nn.Parameter] = (
            make_parameter((vocab_size,), nn.init.zeros_, self.layout, layer_idx, split(0))
            if bias
            else None
        )

    def forward(self, hidden_states: flow.Tensor, word_embeddings: flow.Tensor) -> flow.Tensor:
        """``hidden_states [..., hidden]``, ``word_embeddings [vocab, hidden]`` -> ``[..., vocab]``."""
        if word_embeddings.shape[0] != self.vocab_size:
            raise ValueError(
                f"LMLogits was built for vocab_size={self.vocab_size} but the embedding table "
                f"has {word_embeddings.shape[0]} rows"
            )
        hidden_states = to_sbp(hidden_states, self.layout, self.layer_idx, tensor_sbp=broadcast())
        weight = to_layer(word_embeddings, self.layout, self.layer_idx)
        logits = flow.nn.functional.linear(hidden_states, weight)
        if self.bias is not None:
            logits = logits + self.bias
        return logits
