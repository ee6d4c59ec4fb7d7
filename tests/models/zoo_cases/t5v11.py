"""T5 v1.1 in the parity suite: relative position bias (owned by the first encoder and the
first decoder block, shared by the rest), unscaled attention, RMS norms, bias-free linears,
gated-GELU MLPs, an untied head, and a ``d_kv`` head size different from ``hidden / heads``.

Under PP the decoder's bias is computed on the stage of the first decoder block and travels
to the others; under TP the biases are split over heads like the scores.
"""
import numpy as np

from libai.models import T5ForPreTraining

BATCH, ENC, DEC, VOCAB, LAYERS = 4, 8, 6, 96, 2
BODY = dict(
    vocab_size=VOCAB, hidden_size=32, hidden_layers=LAYERS, num_attention_heads=4, head_size=6,
    intermediate_size=48, hidden_dropout_prob=0.0, attention_dropout_prob=0.0,
    embedding_dropout_prob=0.0, initializer_range=0.2, layernorm_epsilon=1e-6,
    position_embedding_type="relative", relative_attention_num_buckets=8,
    relative_attention_max_distance=16, softmax_scale=1.0, normalization="rmsnorm",
    linear_bias=False, gated_mlp=True, activation="gelu_new", tie_word_embeddings=False,
)


def t5v11_case(rng):
    enc_mask = np.ones((BATCH, ENC), dtype=np.int64)
    enc_mask[2, -3:] = 0  # padding keys in the encoder and in the cross attention
    fields = {
        "encoder_input_ids": (rng.randint(3, VOCAB, size=(BATCH, ENC)), 0),
        "decoder_input_ids": (rng.randint(3, VOCAB, size=(BATCH, DEC)), 0),
        "encoder_attn_mask": (enc_mask, 0),
        "encoder_decoder_attn_mask": (enc_mask, 0),
        "lm_labels": (rng.randint(0, VOCAB, size=(BATCH, DEC)), -1),
        "loss_mask": ((rng.rand(BATCH, DEC) < 0.7).astype(np.int64), -1),
    }
    return (lambda: T5ForPreTraining(BODY)), 2 * LAYERS, fields


CASES = {"t5v11": t5v11_case}
