"""``MLP``: the transformer feed-forward block, column-parallel then row-parallel.

``hidden -> ffn`` is a ``"col"`` Linear, so each tensor-parallel rank holds a slice of the
``ffn`` features and applies the activation to its own slice; ``ffn -> hidden`` is a ``"row"``
Linear that consumes exactly that slice. The pair costs one all-reduce in the forward pass.

``gated=True`` is the GLU family (T5 v1.1's gated-GELU, Llama's SwiGLU): a second ``"col"``
Linear, ``dense_h_to_4h_linear``, is multiplied element-wise with the activated
``dense_h_to_4h``. Both are split the same way, so the product is still local to each rank.
Parameter names and their Hugging Face counterparts:

=========================  =====================  ======================
libai                      T5 v1.1 / MT5          Llama
=========================  =====================  ======================
``dense_h_to_4h``          ``wi_0`` (activated)   ``gate_proj``
``dense_h_to_4h_linear``   ``wi_1``               ``up_proj``
``dense_4h_to_h``          ``wo``                 ``down_proj``
=========================  =====================  ======================
"""
from typing import Any, Callable, Optional

import oneflow as flow
from oneflow import nn

from libai.layers.activation import build_activation
from libai.layers.linear import Linear
from libai.layers.utils import output_dropout
from libai.utils.distributed import current_layout

__all__ = ["MLP"]


class MLP(nn.Module):
    """``dropout(W2 · act(W1 · x + b1) + b2)``, or gated ``dropout(W2 · (act(W1 x) * (V x)))``.

    Args:
        hidden_size: input and output size.
        ffn_hidden_size: inner size (usually ``4 * hidden_size``).
        output_dropout_prob: dropout on the output.
        init_method: initialiser of the first weight.
        output_layer_init_method: initialiser of the second weight (defaults to
            ``init_method``; GPT-style models scale it down with depth).
        bias_gelu_fusion: on CUDA, add the bias and apply GELU in one kernel. Ignored on the
            CPU (no such kernel there) and for activations other than ``"gelu"``.
        bias_dropout_fusion: on CUDA, add the output bias and apply dropout in one kernel.
            Ignored on the CPU.
        activation: activation name (see :func:`libai.layers.build_activation`).
        gated: multiply the activated branch by a second, linear projection
            ``dense_h_to_4h_linear`` (initialised with ``init_method``).
        bias: give the linears biases (T5 v1.1 and Llama have none).
        layer_idx: pipeline position.
    """

    def __init__(
        self,
        hidden_size: int,
        ffn_hidden_size: int,
        output_dropout_prob: float = 0.0,
        init_method: Callable[[flow.Tensor], Any] = nn.init.xavier_normal_,
        output_layer_init_method: Optional[Callable[[flow.Tensor], Any]] = None,
        bias_gelu_fusion: bool = False,
        bias_dropout_fusion: bool = False,
        *,
        activation: str = "gelu",
        gated: bool = False,
        bias: bool = True,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        layout = current_layout()
        on_cuda = layout.device_type == "cuda"
        self.layout = layout
        self.layer_idx = layer_idx
        self.output_dropout_prob = output_dropout_prob
        self.gated = gated
        self.bias_gelu_fusion = (
            bias_gelu_fusion and on_cuda and activation == "gelu" and bias and not gated
        )
        self.bias_dropout_fusion = bias_dropout_fusion and on_cuda and bias
        if output_layer_init_method is None:
            output_layer_init_method = init_method

        self.dense_h_to_4h = Linear(
            hidden_size, ffn_hidden_size, bias=bias, parallel="col", init_method=init_method,
            skip_bias_add=self.bias_gelu_fusion, layer_idx=layer_idx,
        )
        if gated:
            self.dense_h_to_4h_linear = Linear(
                hidden_size, ffn_hidden_size, bias=bias, parallel="col",
                init_method=init_method, layer_idx=layer_idx,
            )
        self.activation_func = build_activation(activation)
        self.dense_4h_to_h = Linear(
            ffn_hidden_size, hidden_size, bias=bias, parallel="row",
            init_method=output_layer_init_method, skip_bias_add=self.bias_dropout_fusion,
            layer_idx=layer_idx,
        )
        self.dropout = nn.Dropout(output_dropout_prob)

    def forward(self, hidden_states: flow.Tensor) -> flow.Tensor:
        inner = self.dense_h_to_4h(hidden_states)
        if self.bias_gelu_fusion:
            inner, bias = inner
            inner = flow._C.fused_bias_add_gelu(inner, bias, axis=inner.ndim - 1)
        else:
            inner = self.activation_func(inner)
        if self.gated:
            inner = inner * self.dense_h_to_4h_linear(hidden_states)
        return output_dropout(self.dropout, self.dense_4h_to_h(inner), self.bias_dropout_fusion)
