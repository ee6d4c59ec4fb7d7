"""The arithmetic of the plans: ZeRO, pipeline bubble and in-flight micro-batches, FLOPs against
Megatron-LM's published formula, unit parsing, and the layout search."""
import os

import pytest

import libai
from libai.config import LazyConfig
from libai.plan.hardware import parse_bytes, parse_rate
from libai.plan.memory import memory_plan
from libai.plan.search import suggest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPT3 = os.path.join(REPO, "configs", "gpt3_175b_pretrain.py")


@pytest.fixture(scope="module")
def gpt3():
    return libai.plan(LazyConfig.load(GPT3), nodes=128, devices_per_node=8, check_data=False)


def test_zero_stages_shard_optimizer_then_gradients_then_parameters_over_data_parallel(gpt3):
    base = memory_plan(gpt3.costs, gpt3.run.with_(zero_stage=0))[3]
    dp = gpt3.run.dp
    z1, z2, z3 = (memory_plan(gpt3.costs, gpt3.run.with_(zero_stage=k))[3] for k in (1, 2, 3))
    assert z1.optimizer == base.optimizer / dp and z1.gradients == base.gradients
    assert z2.gradients == base.gradients / dp and z2.parameters == base.parameters
    assert z3.parameters == base.parameters / dp
    assert base.optimizer == 2 * base.gradients == 2 * base.parameters  # AdamW: two fp32 states


def test_pipeline_bubble_and_micro_batches_in_flight(gpt3):
    run = gpt3.run
    assert gpt3.time.bubble_fraction == pytest.approx((run.pp - 1) / run.accumulation)
    assert [m.micro_batches_in_flight for m in gpt3.memory] == [8, 7, 6, 5, 4, 3, 2, 1]
    eager = memory_plan(gpt3.costs, run.with_(graph=False))
    assert {m.micro_batches_in_flight for m in eager} == {1}


def test_flops_per_step_equal_megatrons_formula_for_gpt3(gpt3):
    """Narayanan et al. 2021, eq. (3), with activation recomputation:
    F = 96 B s l h² (1 + s / 6h + V / 16 l h)."""
    B, s, l, h, V = 1536, 2048, 96, 12288, 51200
    published = 96 * B * s * l * h ** 2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert gpt3.time.model_flops == pytest.approx(published, rel=0.002)


def test_activation_checkpointing_and_amp_shrink_activations(gpt3):
    run = gpt3.run.with_(checkpointing=False, amp=False)
    plain = memory_plan(gpt3.costs, run)[0].activations_per_micro_batch
    ckpt = memory_plan(gpt3.costs, run.with_(checkpointing=True))[0].activations_per_micro_batch
    half = memory_plan(gpt3.costs, run.with_(amp=True))[0].activations_per_micro_batch
    assert ckpt < plain / 10
    assert plain / 2 < half < plain * 0.6  # 1-byte masks and fp32 softmax stay


def test_units_parse_and_bad_ones_say_how_to_write_them():
    assert parse_bytes("80GiB") == 80 * 2 ** 30
    assert parse_bytes("40GB") == 40e9
    assert parse_rate("312T", "flops") == 312e12
    assert parse_rate("300GB/s", "bytes") == 300e9
    with pytest.raises(ValueError, match="write it like 80GiB"):
        parse_bytes("80 gigs")


def test_suggest_ranks_every_valid_layout_of_1024_devices(gpt3):
    ranked = suggest(gpt3.model, gpt3.costs, gpt3.run, gpt3.device, 1024, top=None)
    assert len(ranked) > 500
    for c in ranked:
        assert c.run.dp * c.run.tp * c.run.pp == 1024 and c.run.tp <= 8
        assert c.run.global_batch == 1536
    fitting = [c for c in ranked if c.fits]
    assert fitting and ranked[: len(fitting)] == fitting
    times = [c.time.step_seconds for c in fitting]
    assert times == sorted(times)
    best = fitting[0]
    assert best.peak_bytes == max(m.total for m in memory_plan(gpt3.costs, best.run, gpt3.model.buffer_bytes,
                                                               gpt3.model.tied_embedding_bytes))
    assert best.peak_bytes <= gpt3.device.memory * 0.95


def test_allocator_blocks_follow_oneflows_bin_allocator_rule():
    from libai.plan.memory import allocator_block

    mib = 2 ** 20
    assert allocator_block(0.5 * mib) == 2 * mib  # under 1 MiB: a 2 MiB block
    assert allocator_block(5 * mib) == 20 * mib  # 1 to 10 MiB: a 20 MiB block
    assert allocator_block(10 * mib) == 10 * mib  # from 10 MiB: its size rounded up to 2 MiB
    assert allocator_block(2 * 512 * 50304 * 4) == 198 * mib  # GPT-2 small's logits: 196.5 MiB


def test_logits_fragmentation_by_hand():
    from libai.plan.memory import logits_fragmentation

    mib = 2 ** 20
    # GPT-2 small, 2 × 512 tokens: 198 MiB pieces, each taken whole by one of three 147.375 MiB
    # states (the embedding's gradient and AdamW's two slots): one more piece + 3 × 50.625 MiB
    small = logits_fragmentation(2 * 512 * 50304 * 4, [50304 * 768 * 4] * 3)
    assert small == (198 + 3 * 50.625) * mib
    # GPT-2 tiny: 64 MiB pieces, 8 MiB states split them: one more piece only
    assert logits_fragmentation(8 * 256 * 8192 * 4, [8 * mib] * 3) == 64 * mib
    # states larger than the pieces never land in them; small logits share blocks
    assert logits_fragmentation(16 * mib, [20 * mib]) == 0.0
    assert logits_fragmentation(9 * mib, [1 * mib]) == 0.0
    assert logits_fragmentation(64 * mib, []) == 0.0


def test_allocator_term_of_the_lm_head_stage_in_eager_only(tiny_cfg):
    # 8 × 32 tokens, vocabulary 16,384: fp32 logits 16 MiB, a block of their own; the tied
    # table (16,384 × 64 fp32 = 4 MiB), its gradient and two AdamW slots split the piece; and
    # the masked attention's gradient: zeros (128 KiB) and mask (32 KiB), a 2 MiB block each
    over = ["model.cfg.vocab_size=16384"]
    eager = libai.plan(tiny_cfg, check_data=False, overrides=over + ["graph.enabled=False"]).memory[0]
    assert eager.allocator == (16 + 2 + 2) * 2 ** 20
    assert eager.total == pytest.approx(eager.model_states + eager.activations + eager.transient
                                        + eager.amp_copies + eager.communication + eager.buffers
                                        + 20 * 2 ** 20)
    graph = libai.plan(tiny_cfg, check_data=False, overrides=over + ["graph.enabled=True"]).memory[0]
    assert graph.allocator == 0.0  # a graph plans its memory ahead


def test_causal_attention_given_no_mask_is_planned_without_masked_fill(tiny_cfg):
    """The synthetic GPT's samples carry no mask, so its causal attention adds its own mask as a
    [1, 1, q, k] bias and keeps nothing score-sized for it. Without reading the samples the plan
    must assume the forward's ``attention_mask`` is given: ``masked_fill`` keeps one more fp32
    score tensor and a 1-byte mask, 8 × 32 × 32 scores × 4 heads × 5 bytes in each of 4 layers,
    and in Eager its gradient's zeros and mask open a 2 MiB block each."""
    extra = 4 * 8 * 32 * 32 * 4 * 5
    for graph in (True, False):
        over = [f"graph.enabled={graph}"]
        read = libai.plan(tiny_cfg, overrides=over)
        unread = libai.plan(tiny_cfg, check_data=False, overrides=over)
        assert [m.dims["masked"] for m in read.model.of_kind("attention")] == [False] * 4
        assert [m.dims["masked"] for m in unread.model.of_kind("attention")] == [True] * 4
        assert unread.memory[0].activations - read.memory[0].activations == extra
        assert unread.memory[0].allocator - read.memory[0].allocator == (0 if graph else 4 * 2 ** 20)


def test_layer_norm_keeps_one_tensor_off_cuda_except_under_tensor_parallelism():
    """libai's LayerNorm with scale and shift writes its gradient out off CUDA (it keeps the
    normalised input); under tensor parallelism it runs OneFlow's composite ops, which keep one
    tensor more, as RMSNorm and a LayerNorm without shift always do."""
    from libai.plan.costs import layer_costs
    from libai.plan.shapes import ModelShape, ModuleInfo

    def kept(tp, composite=True, **dims):
        shape = ModelShape("M", [], [ModuleInfo("norm", "norm", 0, dict(dim=64, **dims))], 0, 1)
        return layer_costs(shape, 1, composite)[0].other.bytes(batch=2, seq=8, elem=4, tp=tp)

    one = 2 * 8 * 64 * 4
    assert kept(1, shift=True) == one and kept(2, shift=True) == 2 * one
    assert kept(1, shift=False) == kept(2, shift=False) == 2 * one
    assert kept(1, rms=True) == 2 * one
    assert kept(1, composite=False, shift=True) == kept(2, composite=False, shift=True) == one


def test_the_all_reduce_fusion_buffer_is_planned_on_cuda_only(tiny_cfg):
    """NCCL fuses gradients into buffers of ``train.nccl_fusion_threshold_mb`` (two of them);
    on the CPU the data-parallel ranks reduce them in place (measured: a DP=2 rank of GPT-2 tiny
    holds no more than one process)."""
    over = ["train.dist.data_parallel_size=2", "train.nccl_fusion_threshold_mb=16"]
    cpu = libai.plan(tiny_cfg, world_size=2, check_data=False, overrides=over + ["train.dist.device_type=cpu"])
    cuda = libai.plan(tiny_cfg, world_size=2, check_data=False, overrides=over + ["train.dist.device_type=cuda"])
    assert cpu.memory[0].communication == 0.0
    assert cuda.memory[0].communication == 2 * 16 * 2 ** 20
