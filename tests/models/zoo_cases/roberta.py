"""RoBERTa in the parity suite: the masked-LM model and the causal LM, both 2 blocks.

Row 1 ends in RoBERTa padding (id 1), so the padding-offset position numbering runs on
split/global ids under every layout; the LM head is tied to the vocabulary-parallel
embedding under TP, and blocks split over stages under PP (``num_layers`` = hidden_layers).
"""
import numpy as np

from libai.models import RobertaForCausalLM, RobertaForPreTraining

BATCH, SEQ, VOCAB, LAYERS, PAD = 4, 8, 96, 2, 1
BODY = dict(
    vocab_size=VOCAB, hidden_size=32, hidden_layers=LAYERS, num_attention_heads=4,
    intermediate_size=64, hidden_dropout_prob=0.0, attention_dropout_prob=0.0,
    initializer_range=0.2, max_position_embeddings=SEQ + PAD + 1, pad_token_id=PAD,
    layernorm_position="post",
)


def _ids(rng):
    ids = rng.randint(3, VOCAB, size=(BATCH, SEQ))
    mask = np.ones((BATCH, SEQ), dtype=np.int64)
    ids[1, -3:] = PAD
    mask[1, -3:] = 0
    return ids, mask


def roberta_case(rng):
    ids, mask = _ids(rng)
    loss_mask = (rng.rand(BATCH, SEQ) < 0.4).astype(np.int64) * mask
    loss_mask[:, 0] = 1
    fields = {
        "input_ids": (ids, 0), "attention_mask": (mask, 0),
        "lm_labels": (rng.randint(0, VOCAB, size=(BATCH, SEQ)), -1),
        "loss_mask": (loss_mask, -1),
    }
    return (lambda: RobertaForPreTraining(BODY)), LAYERS, fields


def roberta_causal_case(rng):
    ids, mask = _ids(rng)
    fields = {"input_ids": (ids, 0), "attention_mask": (mask, 0), "labels": (ids, -1),
              "loss_mask": (mask, -1)}
    return (lambda: RobertaForCausalLM(BODY)), LAYERS, fields


CASES = {"roberta": roberta_case, "roberta_causal": roberta_causal_case}
