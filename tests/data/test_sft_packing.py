"""Packed fine-tuning batches train exactly like the same samples unpacked: equal losses and
gradients (Llama: rotary positions; GPT-2: learned positions read from ``position_ids``), and
buckets pad batches without changing them."""
import os
import sys

import numpy as np
import oneflow as flow
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from sft_helpers import load_tokenizer, train_tokenizer  # noqa: E402

from libai.data.datasets import InstructionDataset, PackedDataset, PadCollate  # noqa: E402
from libai.data.datasets.sft import IGNORE_INDEX  # noqa: E402
from libai.data.structures import Instance  # noqa: E402
from libai.models import GPTForPreTraining, LlamaForCausalLM  # noqa: E402

ROWS = [
    {"instruction": "What does math.sqrt do?", "output": "Return the square root of x."},
    {"instruction": "Explain", "input": "os.path.join", "output": "Join paths."},
    {"instruction": "And abs?", "output": "Return the absolute value of the argument."},
    {"instruction": "Split", "output": "Split the string into a list of words."},
    {"instruction": "What does os.path.join return?", "output": "A path."},
]
SEQ = 192


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tok = load_tokenizer(train_tokenizer(str(tmp_path_factory.mktemp("pack_tok"))))
    return InstructionDataset(ROWS, tok, SEQ)


def _models(vocab):
    llama = dict(vocab_size=vocab, hidden_size=32, hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, intermediate_size=48, max_position_embeddings=SEQ)
    gpt = dict(vocab_size=vocab, hidden_size=32, hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_seq_length=SEQ)
    return {"llama": lambda: LlamaForCausalLM(llama), "gpt2": lambda: GPTForPreTraining(gpt)}


def _loss_and_grads(model, batch, layout):
    model.zero_grad()
    loss = model(**batch.to_global(layout).get_fields())["lm_loss"]
    loss.backward()
    grads = {n: p.grad.to_local().numpy().copy() for n, p in model.named_parameters()}
    return float(loss.to_local().numpy()), grads


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_packed_loss_and_gradients_equal_unpacked(data, family, local_layout):
    packed = PackedDataset(data)
    assert len(packed) == 2 and packed.packs[0] == [0, 1, 2]  # three samples share a sequence
    flow.manual_seed(0)
    model = _models(300)[family]().train()
    loss_p, grads_p = _loss_and_grads(model, Instance.stack([packed[i] for i in range(len(packed))]),
                                      local_layout)
    unpacked = Instance.stack([data[i] for i in range(len(data))])
    loss_u, grads_u = _loss_and_grads(model, unpacked, local_layout)
    assert loss_p == pytest.approx(loss_u, rel=1e-5)
    for name, grad in grads_u.items():
        np.testing.assert_allclose(grads_p[name], grad, rtol=1e-4, atol=1e-6, err_msg=name)


def test_packed_fields_are_block_diagonal_with_restarting_positions(data):
    packed = PackedDataset(data)
    item = packed[0]
    lengths = [len(data.samples[i].input_ids) for i in packed.packs[0]]
    starts = np.cumsum([0] + lengths)
    positions = item.position_ids.tensor.numpy()
    mask = item.attention_mask.tensor.numpy()[0]
    for a, b in zip(starts[:-1], starts[1:]):
        assert positions[a:b].tolist() == list(range(b - a))
        assert mask[a:b, a:b].all() and not mask[a:b, :a].any() and not mask[a:b, b:].any()
        assert item.labels.tensor.numpy()[b - 1] == IGNORE_INDEX  # no target across samples
    assert item.labels.tensor.numpy()[starts[-1]:].tolist() == [IGNORE_INDEX] * (SEQ - starts[-1])
    assert 0 < packed.packing_ratio() <= 1


def test_pad_collate_pads_to_the_smallest_bucket(data):
    unpadded = InstructionDataset(ROWS, data.tokenizer, SEQ, padding="none")
    collate = PadCollate(unpadded.pad_token_id, buckets=[32, 64, 96, SEQ])
    batch = collate([unpadded[0], unpadded[1]])
    longest = max(len(unpadded.samples[i].input_ids) for i in (0, 1))
    bucket = min(b for b in (32, 64, 96, SEQ) if b >= longest)
    assert tuple(batch.input_ids.tensor.shape) == (2, bucket)
    full = Instance.stack([data[0], data[1]])
    assert batch.labels.tensor.numpy().tolist() == full.labels.tensor.numpy()[:, :bucket].tolist()
    with pytest.raises(ValueError, match="largest bucket 32"):
        PadCollate(0, buckets=[32])([unpadded[0]])  # 61 tokens


def test_packed_batches_shard_over_data_parallel_ranks_and_resume(data):
    from libai.data.build import build_nlp_train_loader

    twice = InstructionDataset(ROWS * 2, data.tokenizer, 128)
    packed = PackedDataset(twice)  # two samples a sequence
    assert len(packed) == 5

    def first_ids(rank, consumed=0, batches=2):
        loader = build_nlp_train_loader(packed, train_batch_size=1, num_workers=0, seed=3,
                                        consumed_samples=consumed, data_parallel_rank=rank,
                                        data_parallel_size=2)[0]
        out = []
        for _, batch in zip(range(batches), loader):
            out.append(tuple(batch.input_ids.tensor[0].tolist()))
        return out

    rank0, rank1 = first_ids(0), first_ids(1)
    assert len(set(rank0 + rank1)) == 4  # two global steps: four different packed sequences
    assert first_ids(0, consumed=2, batches=1) == rank0[1:]  # resumed after one global step
