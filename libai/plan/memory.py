"""The memory plan of one rank: model states, activations, buffers, and whether it fits.

Ranks of one pipeline stage hold the same amounts (tensor-parallel shards are even), so the
plan is computed per stage. Rules, per rank of stage ``s``:

- parameters: replicated bytes + split bytes / TP of the layers on ``s`` (ZeRO-3: / DP);
- gradients: the trainable parameters' bytes (ZeRO-2 and up: / DP);
- optimizer state: slots × trainable bytes (ZeRO-1 and up: / DP);
- activations: one micro-batch's (``libai.plan.costs``) × the micro-batches in flight; with
  activation checkpointing a block keeps only its input, plus one block recomputed at a time;
- transient: the fp32 gradient of the logits on the stage of the LM head (two of them under
  tensor parallelism, see ``libai.plan.costs``), and the larger of the
  backward workspace of one layer and (with checkpointing) one recomputed block;
- AMP: a 2-byte copy of every local parameter (the casts the matmuls read);
- communication: the gradient all-reduce fusion buffer (twice) under DP on CUDA (NCCL's; measured
  on the CPU, DP=2 ranks hold no more than one process), the send/receive
  buffers of one micro-batch's boundary activation under PP, the copy of a tied word
  embedding (and its gradient) on the last stage when it lives on the first, and on the first
  stage that gradient received back, held through the stage's whole backward (the table's
  gradient is complete only when the lookup's part arrives, at the very end);
- registered buffers (masks, tables) on the first stage;
- allocator (Eager only): what OneFlow's caching allocator loses from the second step on
  around the LM head's fp32 logits-sized tensors (:func:`logits_fragmentation`), around the
  gradient of a composite masked attention (:func:`masked_fill_blocks`), and on the first
  stage of a pipeline the block of the tied gradient received back (:func:`received_grad_block`);
  and, for models the shape pass planned (CNNs, a user's modules, ViT, Swin), the pieces the
  gradients and optimizer state took from the first step's working set (:func:`displaced_by_states`).

OneFlow's eager allocator (``vm::BinAllocator`` in 0.9, the same for CPU and CUDA streams) takes
memory in blocks it never returns while it can grow: a request under 1 MiB opens a 2 MiB block,
one under 10 MiB a 20 MiB block, a larger one a block of its own size rounded up to 2 MiB. It
serves a request from the smallest free piece that holds it, and splits the piece only when the
piece is at least twice the request or the rest is at least 128 MiB; otherwise the request takes
the whole piece. Free pieces merge only with their neighbours inside one block.
"""
from dataclasses import asdict, dataclass
from typing import Dict, List, Sequence

from libai.plan.costs import Activation, LayerCost
from libai.plan.run_shape import RunShape

__all__ = ["StageMemory", "stage_memory", "memory_plan", "allocator_block", "logits_fragmentation",
           "received_grad_block", "masked_fill_blocks", "displaced_by_states"]

MIB = 2 ** 20
_SPLIT_THRESHOLD = 128 * MIB  # a free piece whose rest would be this large is always split


@dataclass(frozen=True)
class StageMemory:
    """Bytes one rank of ``stage`` needs (see the module docstring for each line)."""

    stage: int
    parameters: float
    gradients: float
    optimizer: float
    activations_per_micro_batch: float
    micro_batches_in_flight: int
    activations: float
    transient: float
    amp_copies: float
    communication: float
    buffers: float
    allocator: float = 0.0

    @property
    def model_states(self) -> float:
        return self.parameters + self.gradients + self.optimizer

    @property
    def total(self) -> float:
        return (self.model_states + self.activations + self.transient + self.amp_copies
                + self.communication + self.buffers + self.allocator)

    def as_dict(self) -> Dict[str, float]:
        out = asdict(self)
        out["total"] = self.total
        return out


def _sum(acts: Sequence[Activation]) -> Activation:
    total = Activation()
    for a in acts:
        total.add(a)
    return total


def allocator_block(nbytes: float) -> float:
    """Bytes of the block OneFlow's allocator opens for a request no free piece holds."""
    if nbytes < MIB:
        return 2.0 * MIB
    if nbytes < 10 * MIB:
        return 20.0 * MIB
    return float(-(-int(nbytes) // (2 * MIB)) * 2 * MIB)


def _taken(piece: float, request: float) -> float:
    """Bytes a request occupies in a free piece (the whole piece unless it is split)."""
    return request if piece >= 2 * request or piece - request >= _SPLIT_THRESHOLD else piece


def logits_fragmentation(logits_bytes: float, states: Sequence[float]) -> float:
    """What the allocator loses from the second Eager step on, on the stage of the LM head.

    The first step puts each fp32 logits-sized tensor (the logits, the loss's softmax, their
    gradient) in a block of its own (``allocator_block``; when it is 10 MiB or more, else the
    tensors share blocks and nothing is counted), freed by the first backward. The
    persistent tensors made then, the vocabulary table's gradient and optimizer slots
    (``states``, bytes each), are the largest requests of that moment and the best fit for
    them are those pieces: a state no larger than a piece splits it when the piece is at least
    twice its size, else takes it whole. From the second step the forward finds one logits
    piece fewer and opens one more block, and each state that took a piece whole wastes the
    rest of it. Measured on GPT-2 small (2 × 512 tokens, vocabulary 50,304, width 768: pieces
    of 198 MiB taken whole by three 147 MiB tensors) and tiny (pieces of 64 MiB split by 8 MiB
    states), the footprint after two steps exceeds a perfect packing (the first step's
    footprint + the gradients and optimizer state) by 352 MiB and 70 MiB; this gives 350
    and 64 (``docs/preflight.md``, "The allocator").
    """
    if logits_bytes < 10 * MIB:  # smaller requests share 20 MiB blocks: not modelled
        return 0.0
    piece = allocator_block(logits_bytes)
    fitting = [x for x in states if 0 < x <= piece]
    if not fitting:
        return 0.0
    return piece + sum(_taken(piece, x) - x for x in fitting)


def received_grad_block(grad_bytes: float) -> float:
    """What the allocator adds, beyond the tensor, for the tied gradient the first stage receives.

    The received gradient arrives before any of the stage's activations are freed. The first
    step finds it a piece left free by the forward; from then on the table's gradient keeps a
    piece of that size for good (``zero_grad`` zeroes it, it does not free it) and the table's
    optimizer slots, made at the first update, fill the table-sized pieces the end of the
    first backward frees (best fit), so from the second step the received gradient opens a
    block of its own (:func:`allocator_block`) and the rest of that block is lost. Measured on
    the first stage of GPT-2 tiny at PP=2 (8 MiB table): +20 MiB at the start of the second
    backward, and nothing there when ``zero_grad(set_to_none=True)`` frees the old gradient.
    """
    if grad_bytes <= 0:
        return 0.0
    return allocator_block(grad_bytes) - grad_bytes


def masked_fill_blocks(scores: float, elem: int) -> float:
    """What the allocator loses from the second step on around ``masked_fill``'s gradient.

    OneFlow 0.9 computes it as ``where(mask, zeros_like(x), dy)``: a zero-filled score tensor
    (``scores`` elements of ``elem`` bytes) and the boolean mask broadcast to the scores' shape
    (1 byte each). The second backward opens a block for each of them once more
    (:func:`allocator_block`), and later steps reuse those. Measured with ``masked_fill`` alone
    on 8 × 8 × 256 × 256 scores and a broadcast ``[1, 1, 256, 256]`` mask (no optimizer, the
    gradient freed every step): +36 MiB in the second backward (16 + 20), nothing in the next
    eight; and the same +36 MiB in the second backward of GPT-2 tiny's first pipeline stage.
    """
    if scores <= 0:
        return 0.0
    return allocator_block(elem * scores) + allocator_block(scores)


def displaced_by_states(grads: float, optim: float) -> float:
    """What the allocator loses from the second Eager step on in a model the shape pass planned:
    as many bytes as the gradients and optimizer state.

    The first step runs in fresh blocks: its forward's kept tensors and its backward's
    temporaries. The gradients are made during that backward and the optimizer's slots at the
    first update (SGD's momentum, AdamW's two moments), each put in the smallest free piece that
    holds it, that is in the pieces the first step's activations and temporaries just freed
    (the update itself grows the footprint by less than 1 MiB: ResNet-50 at 64², batch 16, 97.5
    MiB of momentum). They stay there for good (``zero_grad`` zeroes the gradients, it does not
    free them), and the allocator neither moves nor returns a block, so from the second step the
    forward and backward open new blocks for what those pieces held. Measured on the CPU with
    the footprint read after each step (``benchmarks/plan_vs_measured.py``): AlexNet (1,024-wide,
    128², batch 32) grows by 108.3 MiB after its first step against 106.6 of gradients and
    momentum, by exactly two blocks of its 36 MiB first-layer weight (its gradient's and its
    momentum's); the same without momentum by one (36 MiB); ResNet-50 by 251 MiB against 195
    (without momentum 119 against 97.5). libai's transformer families planned by size have the
    narrower terms above instead: their states are a small part of their activations and fit
    in the pieces they take, except around the logits and the masked attention's gradient.
    """
    return grads + optim


def _eager_allocator(costs: Sequence[LayerCost], layers: Sequence[LayerCost], run: RunShape,
                     tied_embedding_bytes: float) -> float:
    """:func:`logits_fragmentation` of the LM head's stage, :func:`masked_fill_blocks` of the
    stage's widest masked attention, :func:`received_grad_block` of the stage holding a tied
    table whose head is elsewhere (0 in Graph mode, whose memory is planned ahead)."""
    if run.graph:
        return 0.0
    tp, dp = run.tp, run.dp
    zero = run.zero_stage if dp > 1 else 0
    if any(c.traced for c in layers):
        trainable = sum(c.train_rep + c.train_split / tp for c in layers)
        displaced = displaced_by_states(trainable / (dp if zero >= 2 else 1),
                                        run.optimizer_slots * trainable / (dp if zero >= 1 else 1))
    else:
        displaced = 0.0
    received = _received_tied_grad(layers, run, tied_embedding_bytes)
    heads = max([c.work_mask for c in layers] + [0.0])
    masked = masked_fill_blocks(run.micro_batch * heads * run.seq * run.seq / tp, run.elem)
    vocab = sum(c.logits_transient for c in layers)
    if not vocab:
        return received_grad_block(received) + masked + displaced
    table = sum(c.vocab_table for c in layers) / tp
    if table:  # the table lives here: its gradient and optimizer slots
        slots = [table / (dp if zero >= 2 else 1)] + [table / (dp if zero >= 1 else 1)] * run.optimizer_slots
    elif run.pp > 1 and tied_embedding_bytes and any(c.vocab_table for c in costs):
        slots = [tied_embedding_bytes / tp]  # the gradient of the tied copy on the last stage
    else:
        slots = []
    return logits_fragmentation(4.0 * run.micro_batch * run.seq * vocab / tp, slots) + masked + displaced


def _received_tied_grad(layers: Sequence[LayerCost], run: RunShape, tied_embedding_bytes: float) -> float:
    """Bytes of the tied table's gradient one rank of this stage receives back: on the stage
    holding the table (the word embedding) when the LM head reading it is on another stage."""
    holds_table = any(c.vocab_table for c in layers)
    has_head = any(c.logits_transient for c in layers)
    if run.pp == 1 or not tied_embedding_bytes or not holds_table or has_head:
        return 0.0
    return tied_embedding_bytes / run.tp


def stage_memory(costs: Sequence[LayerCost], run: RunShape, stage: int, buffer_bytes: float = 0.0,
                 tied_embedding_bytes: float = 0.0) -> StageMemory:
    """The memory of one rank of ``stage`` (module docstring)."""
    layers = [costs[i] for i in run.layers_of_stage(stage)]
    tp, dp, b, s, e = run.tp, run.dp, run.micro_batch, run.seq, run.elem
    zero = run.zero_stage if dp > 1 else 0
    params = sum(c.param_rep + c.param_split / tp for c in layers)
    trainable = sum(c.train_rep + c.train_split / tp for c in layers)
    grads = trainable / (dp if zero >= 2 else 1)
    optim = run.optimizer_slots * trainable / (dp if zero >= 1 else 1)
    if zero >= 3:
        params /= dp
    other = _sum([c.other for c in layers]).bytes(b, s, e, tp)
    if run.checkpointing:
        kept = sum(b * s * e * c.block_hidden for c in layers)
        one_block = max([c.block.bytes(b, s, e, tp) / max(c.num_blocks, 1) for c in layers] + [0.0])
        per_micro = other + kept
        recompute = one_block
    else:
        per_micro = other + _sum([c.block for c in layers]).bytes(b, s, e, tp)
        recompute = 0.0
    in_flight = run.in_flight(stage)
    workspace = max([c.workspace(b, s, e, tp) for c in layers] + [0.0])
    logits_grads = sum(c.logits_transient + (c.logits_transient_tp if tp > 1 else 0.0) for c in layers)
    transient = 4.0 * b * s * logits_grads / tp + max(recompute, workspace)
    comm = 2 * run.fusion_buffer_bytes if dp > 1 else 0.0
    if run.pp > 1:
        hidden = max([c.block_hidden // max(c.num_blocks, 1) for c in costs] + [0])
        comm += 2 * b * s * hidden * e
        if stage == run.pp - 1 and tied_embedding_bytes:
            comm += 2 * tied_embedding_bytes / tp
        comm += _received_tied_grad(layers, run, tied_embedding_bytes)
    amp = 2.0 * sum(c.param_rep + c.param_split / tp for c in layers) / 4 if run.amp else 0.0
    return StageMemory(
        stage=stage, parameters=params, gradients=grads, optimizer=optim,
        activations_per_micro_batch=per_micro, micro_batches_in_flight=in_flight,
        activations=per_micro * in_flight, transient=transient, amp_copies=amp,
        communication=comm, buffers=buffer_bytes if stage == 0 else 0.0,
        allocator=_eager_allocator(costs, layers, run, tied_embedding_bytes),
    )


def memory_plan(costs: Sequence[LayerCost], run: RunShape, buffer_bytes: float = 0.0,
                tied_embedding_bytes: float = 0.0) -> List[StageMemory]:
    """:func:`stage_memory` of every stage."""
    return [stage_memory(costs, run, s, buffer_bytes, tied_embedding_bytes) for s in range(run.pp)]
