"""Packed fine-tuning batches in the parity suite: Llama (rotary) and GPT-2 (learned positions)
fed what :class:`~libai.data.datasets.PackedDataset` gives, a block-diagonal ``attention_mask``
``[batch, 1, seq, seq]`` (boolean), ``position_ids`` restarting per sample and labels that
are -100 on prompts, sample ends and padding, so the mask and the positions are checked under
every layout against one process."""
import numpy as np

from libai.models import GPTForPreTraining, LlamaForCausalLM

BATCH, SEQ, VOCAB, LAYERS = 4, 12, 96, 2
LENGTHS = ([5, 4, 3], [7, 5], [3, 3, 4], [12])  # samples per row; the rest is padding


def _fields(rng):
    ids = rng.randint(0, VOCAB, size=(BATCH, SEQ))
    labels = np.full((BATCH, SEQ), -100)
    mask = np.zeros((BATCH, 1, SEQ, SEQ), dtype=bool)
    positions = np.zeros((BATCH, SEQ), dtype=np.int64)
    for row, lengths in enumerate(LENGTHS):
        start = 0
        for length in lengths + [SEQ - sum(lengths)]:
            end = start + length
            mask[row, 0, start:end, start:end] = True
            positions[row, start:end] = np.arange(length)
            if end <= sum(lengths):  # a sample: its second half is the response
                trained = range(start + length // 2, end - 1)
                labels[row, list(trained)] = ids[row, [t + 1 for t in trained]]
            start = end
    return {"input_ids": (ids, 0), "labels": (labels, -1), "attention_mask": (mask, 0),
            "position_ids": (positions, 0)}


def llama_packed_case(rng):
    body = dict(vocab_size=VOCAB, hidden_size=32, hidden_layers=LAYERS, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=48, max_position_embeddings=SEQ,
                initializer_range=0.2)
    return lambda: LlamaForCausalLM(body), LAYERS, _fields(rng)


def gpt_packed_case(rng):
    body = dict(vocab_size=VOCAB, hidden_size=32, hidden_layers=LAYERS, num_attention_heads=4,
                intermediate_size=64, max_seq_length=SEQ, initializer_range=0.2,
                embedding_dropout_prob=0.0, hidden_dropout_prob=0.0, attention_dropout_prob=0.0)
    return lambda: GPTForPreTraining(body), LAYERS, _fields(rng)


CASES = {"llama_packed": llama_packed_case, "gpt_packed": gpt_packed_case}
