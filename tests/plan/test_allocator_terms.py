"""The Eager allocator terms of the memory plan beyond the LM head's logits: the tied gradient
the first pipeline stage receives back, and the gradient of a composite masked attention
(``docs/preflight.md``, "The allocator"). Each number is computed by hand from OneFlow 0.9's
block rule: under 1 MiB a 2 MiB block, under 10 MiB a 20 MiB block, else its size rounded up
to 2 MiB."""
import pytest

import libai
from libai.plan.costs import LayerCost
from libai.plan.memory import masked_fill_blocks, received_grad_block

MIB = 2 ** 20


def test_received_tied_gradient_loses_the_rest_of_its_block():
    # GPT-2 tiny at PP=2: an 8,192 × 256 fp32 table = 8 MiB, which opens a 20 MiB block
    assert received_grad_block(8192 * 256 * 4) == 12 * MIB
    # from 10 MiB a block is the request rounded up to 2 MiB: 16.5 MiB -> 18 MiB
    assert received_grad_block(16.5 * MIB) == 1.5 * MIB
    assert received_grad_block(16 * MIB) == 0.0
    assert received_grad_block(0.0) == 0.0


def test_masked_fill_gradient_opens_its_zeros_and_mask_blocks_once_more():
    # GPT-2 tiny: 8 samples × 8 heads × 256² scores: fp32 zeros 16 MiB (a block of its own)
    # and the broadcast bool mask 4 MiB (a 20 MiB block)
    assert masked_fill_blocks(8 * 8 * 256 * 256, 4) == (16 + 20) * MIB
    # GPT-2 small: 2 × 12 × 512²: zeros 24 MiB, mask 6 MiB -> 24 + 20
    assert masked_fill_blocks(2 * 12 * 512 * 512, 4) == (24 + 20) * MIB
    # half of GPT-2 tiny's heads (TP=2): zeros 8 MiB and mask 2 MiB, a 20 MiB block each
    assert masked_fill_blocks(8 * 4 * 256 * 256, 4) == (20 + 20) * MIB
    assert masked_fill_blocks(0.0, 4) == 0.0


def test_masked_attention_workspace_adds_masked_fills_zeros_and_full_mask():
    # 8 × 256 tokens, 8 heads, inner size 1024, fp32: two score gradients = 32 MiB; the masked
    # one adds a 16 MiB fp32 zeros tensor and a 4 MiB bool mask
    plain = LayerCost(0, work_score=8, work_split=1024)
    masked = LayerCost(0, work_score=8, work_split=1024, work_mask=8)
    assert plain.workspace(8, 256, 4, 1) == 32 * MIB
    assert masked.workspace(8, 256, 4, 1) == (32 + 16 + 4) * MIB
    assert masked.workspace(8, 256, 4, 2) == 26 * MIB  # heads split over tensor parallelism
    # a short sequence: the MLP's two inner gradients (2 × 8 × 16 × 1024 × 4 B) are the larger
    assert masked.workspace(8, 16, 4, 1) == 2 * 8 * 16 * 1024 * 4


def test_first_pipeline_stage_plans_the_tied_gradient_it_receives(tiny_cfg):
    # the synthetic tiny GPT at PP=2: 8 × 32 tokens, width 64, 4 heads, vocabulary 128
    plan = libai.plan(tiny_cfg, check_data=False, world_size=2,
                      overrides=["graph.enabled=False", "train.dist.pipeline_parallel_size=2"])
    first, last = plan.memory
    table = 128 * 64 * 4  # the tied word embedding, on the first stage
    boundary = 2 * 8 * 32 * 64 * 4  # send + receive of one micro-batch's hidden states
    assert plan.tied_embedding_bytes == table
    assert first.communication == boundary + table  # + the table's gradient from the last stage
    assert last.communication == boundary + 2 * table  # the copy and its gradient
    scores = 8 * 4 * 32 * 32  # 128 KiB of fp32 zeros and 32 KiB of mask: a 2 MiB block each
    assert first.allocator == (2 * MIB - table) + 2 * MIB + 2 * MIB
    # the last stage: logits of 8 × 32 × 128 fp32 (128 KiB) share blocks, so only the mask terms
    assert last.allocator == masked_fill_blocks(scores, 4) == 4 * MIB
    graph = libai.plan(tiny_cfg, check_data=False, world_size=2,
                       overrides=["graph.enabled=True", "train.dist.pipeline_parallel_size=2",
                                  "train.num_accumulation_steps=4"])
    assert [m.allocator for m in graph.memory] == [0.0, 0.0]
    assert graph.memory[0].communication == pytest.approx(boundary + table)
