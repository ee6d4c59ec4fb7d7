"""Llama: a pre-norm decoder with RMSNorm, rotary positions, SwiGLU and grouped-query attention.

``LlamaModel`` maps ``input_ids [batch, seq]`` to the final normalised hidden states;
``LlamaForCausalLM`` adds the LM head and the loss (position ``t`` predicts ``labels[:, t]``;
the data pipeline supplies labels already shifted by one token, as for GPT-2; -100 is
ignored). Module names outside the blocks follow Hugging Face's (``model.embed_tokens``,
``model.layers.N``, ``model.norm``, ``lm_head``). Each block is libai's one
:class:`~libai.layers.TransformerLayer` configured the Llama way (see :func:`llama_block`):

- ``input_layernorm`` / ``post_attention_layernorm`` (and the final ``norm``):
  :class:`~libai.layers.RMSLayerNorm`;
- ``self_attention``: :class:`~libai.layers.MultiheadAttention` without biases, with
  ``num_key_value_heads`` (grouped-query attention; projections ``query``, ``key_value``,
  ``dense``) and a :class:`~libai.layers.RotaryEmbedding`;
- ``mlp``: :class:`~libai.layers.MLP` with ``gated=True, activation="silu"`` (SwiGLU), no biases.

Rotary embeddings encode only relative distances, so the number a prompt's first real token
gets (left padding) does not change the function: the ``position_ids`` generation passes are
accepted and not needed, and with a key/value cache the attention rotates new queries and
keys by the cached length.

Families configured from this skeleton (:func:`llama_family`: Qwen2, Mistral, Qwen3, Gemma,
Phi-3) differ only by settings of :class:`LlamaModel`: ``qkv_bias``, ``sliding_window``,
``head_dim``, ``qk_norm``, ``activation``, ``norm_weight_offset``, ``scale_embeddings``.

Parallelism: embeddings at ``layer_idx`` 0, block ``i`` at ``i``, final norm / head / loss at
``-1`` (``train.dist.pipeline_num_layers = hidden_layers``). Tensor parallelism splits query
and key/value heads, so both head counts must be divisible by the tensor parallel size.
"""
import inspect
from typing import Any, Dict, Mapping, Optional, Tuple, Union

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import RMSLayerNorm, RotaryEmbedding, TransformerLayer, VocabEmbedding
from libai.models.common.losses import GPTLoss
from libai.models.language_model import (
    Cache,
    CausalLMTask,
    LanguageModelBody,
    join_cache,
    lm_head,
    lm_logits,
    split_cache,
)
from libai.models.transformer import init_methods, run_blocks

__all__ = ["LlamaModel", "LlamaForCausalLM", "llama_block", "llama_family"]

def llama_block(
    hidden_size: int,
    intermediate_size: int,
    num_attention_heads: int,
    num_key_value_heads: int,
    *,
    rotary: RotaryEmbedding,
    rms_norm_eps: float,
    attention_dropout_prob: float,
    hidden_dropout_prob: float,
    init_method: Any,
    output_layer_init_method: Any,
    scale_mask_softmax_fusion: bool,
    layer_idx: int,
    activation: str = "silu",
    **family: Any,
) -> TransformerLayer:
    """One Llama block: libai's pre-norm :class:`~libai.layers.TransformerLayer` with RMSNorm,
    bias-free grouped-query causal attention rotated by ``rotary``, and a SwiGLU MLP::

        h = x + Attn(RMSNorm(x));  out = h + SwiGLU(RMSNorm(h))

    ``activation`` is the gate's (GeGLU with ``"gelu_tanh"``); ``family`` are the other
    :class:`~libai.layers.TransformerLayer` options a family of this skeleton sets
    (``qkv_bias``, ``sliding_window``, ``qk_norm_eps``, ``head_size``,
    ``rmsnorm_weight_offset``).
    """
    return TransformerLayer(
        hidden_size, intermediate_size, num_attention_heads,
        attention_dropout_prob=attention_dropout_prob, output_dropout_prob=hidden_dropout_prob,
        layernorm_epsilon=rms_norm_eps, init_method=init_method,
        output_layer_init_method=output_layer_init_method,
        scale_mask_softmax_fusion=scale_mask_softmax_fusion, attn_mask_type="causal",
        activation=activation, normalization="rmsnorm", bias=False, gated_mlp=True,
        num_key_value_heads=num_key_value_heads, rotary_embedding=rotary, layer_idx=layer_idx,
        **family,
    )


class LlamaModel(LanguageModelBody):
    """The Llama body: ``input_ids -> `` final RMS-normalised hidden states.

    Args:
        vocab_size: vocabulary size (divisible by the tensor parallel size).
        hidden_size, hidden_layers, num_attention_heads, intermediate_size: sizes
            (Llama-2-7B: 4096, 32, 32, 11008).
        num_key_value_heads: key/value heads of grouped-query attention (None: one per
            query head, i.e. multi-head attention); divides ``num_attention_heads``.
        max_position_embeddings: rotary table length (longer inputs extend it).
        rms_norm_eps: RMSNorm eps (Llama-2: 1e-5; many small checkpoints 1e-6).
        rope_theta: the rotary frequency base.
        initializer_range: std of the normal initialisation.
        use_scaled_init_for_output_weights: shrink residual-branch output weights with depth
            (off in Llama).
        tie_word_embeddings: accepted here so one config builds both classes (the head is
            :class:`LlamaForCausalLM`'s).
        attention_dropout_prob, hidden_dropout_prob: dropouts (0 in Llama).
        qkv_bias: biases on the query/key/value projections (Qwen2's; the output projection
            and the MLP stay bias-free).
        sliding_window: each query attends to this many most recent tokens (Mistral's
            sliding-window attention; None: all before it).
        head_dim: features per attention head (None: ``hidden_size / num_attention_heads``;
            Gemma and Qwen3 set it explicitly).
        qk_norm: RMS-normalise each head's query and key before rotation (Qwen3).
        activation: the gate's activation: ``"silu"`` (SwiGLU) or ``"gelu_tanh"`` (Gemma's
            GeGLU).
        norm_weight_offset: every RMSNorm scales by ``offset + weight`` (Gemma: 1).
        scale_embeddings: multiply the embeddings by ``sqrt(hidden_size)`` in their dtype
            (Gemma).
        scale_mask_softmax_fusion: CUDA fusion, ignored on the CPU.
        amp_enabled: accepted for LiBai configs; AMP is applied by the engine.
    """

    @configurable
    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        hidden_layers: int,
        num_attention_heads: int,
        intermediate_size: int,
        num_key_value_heads: Optional[int] = None,
        max_position_embeddings: int = 2048,
        rms_norm_eps: float = 1e-6,
        rope_theta: float = 10000.0,
        initializer_range: float = 0.02,
        use_scaled_init_for_output_weights: bool = False,
        tie_word_embeddings: bool = False,
        attention_dropout_prob: float = 0.0,
        hidden_dropout_prob: float = 0.0,
        qkv_bias: bool = False,
        sliding_window: Optional[int] = None,
        head_dim: Optional[int] = None,
        qk_norm: bool = False,
        activation: str = "silu",
        norm_weight_offset: float = 0.0,
        scale_embeddings: bool = False,
        scale_mask_softmax_fusion: bool = False,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__()
        kv_heads = num_key_value_heads or num_attention_heads
        _check_heads(hidden_size if head_dim is None else head_dim * num_attention_heads,
                     num_attention_heads, kv_heads)
        head_dim = head_dim or hidden_size // num_attention_heads
        self.config = dict(
            vocab_size=vocab_size, hidden_size=hidden_size, hidden_layers=hidden_layers,
            num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
            num_key_value_heads=kv_heads, max_position_embeddings=max_position_embeddings,
            rms_norm_eps=rms_norm_eps, rope_theta=rope_theta, initializer_range=initializer_range,
            tie_word_embeddings=tie_word_embeddings, attention_dropout_prob=attention_dropout_prob,
            hidden_dropout_prob=hidden_dropout_prob, qkv_bias=qkv_bias,
            sliding_window=sliding_window, head_dim=head_dim, qk_norm=qk_norm,
            activation=activation, norm_weight_offset=norm_weight_offset,
            scale_embeddings=scale_embeddings,
        )
        self.scale_embeddings = scale_embeddings
        init, output_init = init_methods(
            initializer_range, hidden_layers, use_scaled_init_for_output_weights
        )
        self.embed_tokens = VocabEmbedding(
            vocab_size, hidden_size, init, layer_idx=0, amp_enabled=amp_enabled
        )
        self.layers = nn.ModuleList([
            llama_block(
                hidden_size, intermediate_size, num_attention_heads, kv_heads,
                # one rotary table per block, on the block's pipeline stage
                rotary=RotaryEmbedding(head_dim, max_position_embeddings, base=rope_theta,
                                       layer_idx=i),
                rms_norm_eps=rms_norm_eps, attention_dropout_prob=attention_dropout_prob,
                hidden_dropout_prob=hidden_dropout_prob, init_method=init,
                output_layer_init_method=output_init,
                scale_mask_softmax_fusion=scale_mask_softmax_fusion, layer_idx=i,
                activation=activation, **_block_options(
                    qkv_bias, sliding_window, head_dim, hidden_size // num_attention_heads,
                    rms_norm_eps if qk_norm else None, norm_weight_offset),
            )
            for i in range(hidden_layers)
        ])
        self.norm = RMSLayerNorm(hidden_size, eps=rms_norm_eps, layer_idx=-1,
                                 **_offset(norm_weight_offset))

    def forward(
        self,
        input_ids: flow.Tensor,
        attention_mask: Optional[flow.Tensor] = None,
        past_key_values: Optional[Cache] = None,
        use_cache: bool = False,
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Cache]]:
        """Hidden states ``[batch, seq, hidden]``; with ``use_cache`` also the new cache.

        ``attention_mask`` ``[batch, past + seq]`` marks real tokens (1) and padding (0);
        ``past_key_values`` is what an earlier ``use_cache=True`` call returned, and
        ``input_ids`` are then only the tokens after it.
        """
        out = run_blocks(
            self.layers, self.embed(input_ids), attention_mask, past_key_values, use_cache
        )
        hidden, presents = split_cache(out, use_cache)
        return join_cache(self.norm(hidden), presents, use_cache)

    def embed(self, input_ids: flow.Tensor) -> flow.Tensor:
        """The word embeddings, times ``sqrt(hidden_size)`` rounded to their dtype when
        ``scale_embeddings`` (Gemma multiplies by that constant in the compute dtype)."""
        embeddings = self.embed_tokens(input_ids)
        if not self.scale_embeddings:
            return embeddings
        return embeddings * _rounded(self.config["hidden_size"] ** 0.5, embeddings.dtype)


class LlamaForCausalLM(CausalLMTask):
    """Llama with its LM head and causal LM loss.

    Build with ``LlamaForCausalLM(cfg)`` / ``LlamaForCausalLM(cfg=cfg)`` (a dict of
    :class:`LlamaModel` settings) or with LlamaModel's keyword arguments directly. The head is
    a separate column-parallel ``lm_head`` (vocabulary-split logits), or the word embedding
    itself when ``tie_word_embeddings``.

    ``forward(input_ids, labels=None, ...)`` (:meth:`CausalLMTask.forward`; ``position_ids``
    is accepted for the generation interface and not needed) returns ``{"lm_loss": scalar}``
    in training when labels are given, else ``{"prediction_scores": logits}``.
    ``from_pretrained(hf_dir)``, ``save_pretrained(dir)`` and ``generate(...)`` work as for
    GPT-2 (see docs/llama_and_lora.md).

    A family configured from this skeleton (Qwen2) derives from it and names its body class
    in ``body_class``.
    """

    body_class: type = LlamaModel

    @configurable
    def __init__(self, cfg: Optional[Mapping] = None, **model_args: Any) -> None:
        super().__init__()
        args, _ = self.body_arguments(cfg, model_args, self.body_class)
        self.model = self.body_class(**args)
        # the body's settings, its family's defaults included (Gemma ties its head)
        self.tie_word_embeddings = bool(self.model.config["tie_word_embeddings"])
        init, _ = init_methods(self.model.config["initializer_range"], 1, False)
        self.lm_head = lm_head(args["vocab_size"], args["hidden_size"],
                               tied=self.tie_word_embeddings, init_method=init)
        self.loss_func = GPTLoss(layer_idx=-1)

    @property
    def config(self) -> Dict[str, Any]:
        """The body's settings (what ``save_pretrained`` writes as ``config.json``)."""
        return self.model.config

    def logits(
        self,
        input_ids: flow.Tensor,
        attention_mask: Optional[flow.Tensor] = None,
        past_key_values: Optional[Cache] = None,
        use_cache: bool = False,
    ) -> Union[flow.Tensor, Tuple[flow.Tensor, Cache]]:
        """Logits ``[batch, seq, vocab]`` (split over the vocabulary under tensor parallel)."""
        out = self.model(input_ids, attention_mask, past_key_values, use_cache)
        hidden, presents = split_cache(out, use_cache)
        tied = self.model.embed_tokens.weight if self.tie_word_embeddings else None
        return join_cache(lm_logits(self.lm_head, hidden, tied), presents, use_cache)

    def _causal_logits(self, input_ids, attention_mask, past_key_values, use_cache, position_ids):
        # position_ids (which generation passes) are not needed: rotary attention depends only
        # on relative positions
        return self.logits(input_ids, attention_mask, past_key_values, use_cache)


def llama_family(
    module: str, body: str, task: str, doc: str, **defaults: Any
) -> Tuple[type, type]:
    """``(body class, causal LM class)`` of a family that is a configuration of this skeleton.

    The body is a :class:`LlamaModel` whose constructor has the family's ``defaults`` (its
    signature shows them, and config resolution reads it); the causal LM is a
    :class:`LlamaForCausalLM` over that body. ``module`` is where the family's classes are
    named (their import path); ``doc`` says what the family sets.
    """
    signature = inspect.signature(LlamaModel.__init__)
    unknown = sorted(set(defaults) - set(signature.parameters))
    if unknown:
        raise TypeError(f"{body}: {unknown} are not LlamaModel settings")
    signature = signature.replace(parameters=[
        p.replace(default=defaults[p.name]) if p.name in defaults else p
        for p in signature.parameters.values()
    ])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        del arguments["self"]
        LlamaModel.__init__(self, **arguments)

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{body}.__init__"
    attrs = {"__init__": configurable(__init__), "__module__": module, "__doc__": doc}
    body_class = type(body, (LlamaModel,), dict(attrs, __qualname__=body))
    task_doc = f"{body} with its LM head and causal LM loss (see :class:`LlamaForCausalLM`)."
    task_class = type(task, (LlamaForCausalLM,), {
        "body_class": body_class, "__module__": module, "__qualname__": task, "__doc__": task_doc,
    })
    return body_class, task_class


def _rounded(value: float, dtype: flow.dtype) -> float:
    """``value`` rounded to ``dtype`` (to nearest, ties to even), as a Python float."""
    if dtype == flow.float16:
        return float(np.float16(value))
    if dtype == flow.bfloat16:  # the top 16 bits of the float32, rounded
        bits = int(np.float32(value).view(np.uint32))
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return float(np.uint32(bits).view(np.float32))
    return float(np.float32(value)) if dtype == flow.float32 else value


def _offset(weight_offset: float) -> Dict[str, float]:
    return {"weight_offset": weight_offset} if weight_offset else {}


def _block_options(
    qkv_bias: bool, sliding_window: Optional[int], head_dim: int, default_head_dim: int,
    qk_norm_eps: Optional[float], norm_weight_offset: float,
) -> Dict[str, Any]:
    """The TransformerLayer options a family sets; none when it is plain Llama (so Llama's
    blocks are built exactly as before)."""
    options: Dict[str, Any] = {}
    if qkv_bias:
        options["qkv_bias"] = True
    if sliding_window is not None:
        options["sliding_window"] = sliding_window
    if head_dim != default_head_dim:
        options["head_size"] = head_dim
    if qk_norm_eps is not None:
        options["qk_norm_eps"] = qk_norm_eps
    if norm_weight_offset:
        options["rmsnorm_weight_offset"] = norm_weight_offset
    return options


def _check_heads(hidden_size: int, heads: int, kv_heads: int) -> None:
    if hidden_size % heads:
        raise ValueError(
            f"hidden_size={hidden_size} is not divisible by num_attention_heads={heads}"
        )
    if heads % kv_heads:
        raise ValueError(
            f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv_heads}; "
            "each key/value head serves a whole group of query heads"
        )
