"""Llama in the parity suite: a 2-block model with grouped-query attention (4 query heads,
2 key/value heads, so tensor parallelism hands each rank one whole group), rotary positions,
SwiGLU and RMSNorm; and the same model with LoRA adapters on its attention projections.

``llama``: untied, column-parallel LM head. ``llama_lora``: tied head (the vocabulary-parallel
embedding reused by LMLogits), LoRA (rank 4) on ``query``/``key_value`` (column-parallel: B
split like the output) and ``dense`` (row-parallel: A split like the input), with non-zero B
so every adapter tensor gets a gradient; the base stays trainable here so its gradients are
compared too. ``num_layers`` = hidden_layers for pipeline stages.
"""
import numpy as np

from libai.models import LlamaForCausalLM
from libai.models.pretrained.placement import assign_state
from libai.models.utils.lora import apply_lora, lora_modules

BATCH, SEQ, VOCAB, LAYERS = 4, 8, 96, 2
BODY = dict(
    vocab_size=VOCAB, hidden_size=32, hidden_layers=LAYERS, num_attention_heads=4,
    num_key_value_heads=2, intermediate_size=48, max_position_embeddings=SEQ,
    initializer_range=0.2,
)


def _fields(rng):
    ids = rng.randint(0, VOCAB, size=(BATCH, SEQ + 1))
    labels = ids[:, 1:].copy()
    labels[0, -2:] = -100  # ignored positions
    return {"input_ids": (ids[:, :-1], 0), "labels": (labels, -1)}


def llama_case(rng):
    return lambda: LlamaForCausalLM(BODY), LAYERS, _fields(rng)


def _lora_model():
    model = LlamaForCausalLM(dict(BODY, tie_word_embeddings=True))
    apply_lora(model, ["query", "key_value", "dense"], rank=4, alpha=8, freeze_base=False)
    values = np.random.RandomState(7)
    for name, module in sorted(lora_modules(model).items()):
        shape = tuple(module.lora_B.weight.shape)
        assign_state(module.lora_B, {"weight": values.randn(*shape).astype("float32") * 0.1})
    return model


def llama_lora_case(rng):
    return _lora_model, LAYERS, _fields(rng)


CASES = {"llama": llama_case, "llama_lora": llama_lora_case}
