"""Tiny randomly initialised GPT-2 and T5 models shared by the generation tests.

The initialiser range is large so that next-token distributions are peaked and greedy choices
do not hinge on float rounding (cached and uncached attention sum in different orders).
"""
import numpy as np
import oneflow as flow

from libai.models import GPTForPreTraining, T5ForPreTraining
from libai.utils.distributed import ParallelLayout

VOCAB, EOS, PAD = 96, 2, 0
BODY = dict(vocab_size=VOCAB, hidden_size=32, hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, initializer_range=0.3, hidden_dropout_prob=0.0,
            attention_dropout_prob=0.0)


def one_process() -> ParallelLayout:
    return ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0)


def tiny_gpt(seed: int = 0, layout: ParallelLayout = None) -> GPTForPreTraining:
    flow.manual_seed(seed)
    with layout or one_process():
        model = GPTForPreTraining(dict(BODY, max_seq_length=64, embedding_dropout_prob=0.0))
    return model.eval()


def tiny_t5(seed: int = 0, layout: ParallelLayout = None) -> T5ForPreTraining:
    flow.manual_seed(seed)
    with layout or one_process():
        model = T5ForPreTraining(dict(BODY, max_position_embeddings=64))
    return model.eval()


def prompts(seed: int = 0, batch: int = 2, length: int = 5) -> np.ndarray:
    return np.random.RandomState(seed).randint(3, VOCAB, size=(batch, length))


def left_padded(seed: int = 0):
    """Two prompts of lengths 5 and 3, the second padded on the left, with their mask."""
    ids = prompts(seed)
    mask = np.ones_like(ids)
    ids[1, :2], mask[1, :2] = PAD, 0
    return ids, mask
