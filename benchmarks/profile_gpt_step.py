"""Where the time of a GPT-2-tiny training step goes, part by part, by the wall clock.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/profile_gpt_step.py [--repeats 5]

The model of benchmarks/vs_libai.py (4 layers, hidden 256, 8 heads, FFN 1024, sequence 128,
vocabulary 8192, micro-batch 4, dropout 0.1), in Eager mode. OneFlow 0.9's own profiler aborts
on this CPU build (``DisableProfilerAndReturnResult`` check failure), so each part is timed on
its own, between two waits for all queued work, and shown as a share of the full step:

* the whole step (forward, backward, AdamW update) and the forward alone;
* the vocabulary projection and the cross-entropy on the 512 x 8192 logits, forward+backward;
* the attention scores, mask and softmax of one layer, forward+backward, times 4 layers;
* the optimizer update alone (AdamW over every parameter, with the gradients in place);
* the gradient-norm computation of clipping (``clip_grad_norm_global``, every gradient);
* a 1024^2 fp32 matmul in OneFlow and NumPy (GFLOP/s) for the machine's peak.

Each figure is the median of ``--repeats`` rounds; the rounds interleave the parts, so a change
in the machine's load falls on all of them.
"""
import argparse
import statistics
import sys
import os
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (chooses the BLAS kernels before OneFlow loads)
import numpy as np  # noqa: E402
import oneflow as flow  # noqa: E402

from libai.utils.process import wait_for_queued_work  # noqa: E402


def timed(fn, n):
    wait_for_queued_work()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    wait_for_queued_work()
    return (time.perf_counter() - start) / n


def build_parts():
    """The timed pieces: a whole Eager step of GPT-2 tiny and its parts in isolation, plus a
    1024x1024 matmul in OneFlow and numpy for the machine's peak. Returns ``(parts, n)``."""
    from libai.models import GPTForPreTraining
    from libai.utils.distributed import ParallelLayout

    vocab, hidden, layers, heads, ffn, seq, batch = 8192, 256, 4, 8, 1024, 128, 4
    with ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0):
        model = GPTForPreTraining(dict(
            vocab_size=vocab, hidden_size=hidden, hidden_layers=layers, num_attention_heads=heads,
            intermediate_size=ffn, max_seq_length=seq, embedding_dropout_prob=0.1,
            attention_dropout_prob=0.1, hidden_dropout_prob=0.1))
    model.train()
    opt = flow.optim.AdamW(model.parameters(), lr=1e-4)
    ids = flow.randint(0, vocab, (batch, seq))

    def loss_of(out):
        return sum(v for k, v in out.items() if "loss" in k)

    def step():
        loss_of(model(input_ids=ids, labels=ids)).backward()
        opt.step()
        opt.zero_grad()

    def forward():
        with flow.no_grad():
            model(input_ids=ids, labels=ids)

    h = flow.randn(batch * seq, hidden, requires_grad=True)
    w = flow.randn(vocab, hidden, requires_grad=True)
    labels = flow.randint(0, vocab, (batch * seq,))

    def lm_head():
        logits = flow.matmul(h, w, transpose_b=True)
        flow.nn.functional.cross_entropy(logits, labels).backward()

    q = flow.randn(batch, heads, seq, hidden // heads, requires_grad=True)
    k = flow.randn(batch, heads, seq, hidden // heads, requires_grad=True)
    causal = flow.tril(flow.ones(seq, seq, dtype=flow.bool))

    def attention_scores():
        for _ in range(layers):
            scores = flow.matmul(q, k, transpose_b=True) / (hidden // heads) ** 0.5
            scores = flow.masked_fill(scores, ~causal, -10000.0)
            flow.softmax(scores, dim=-1).sum().backward()

    # gradients in place for the optimizer-only timing
    loss_of(model(input_ids=ids, labels=ids)).backward()

    def update():
        opt.step()

    from libai.engine.optimizer_step import clip_grad_norm_global

    params = list(model.parameters())

    def clip():
        clip_grad_norm_global(params, max_norm=1e9)  # the norm's cost; the scale is 1

    n = 1024
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    fa, fb = flow.tensor(a), flow.tensor(b)

    parts = {"step": step, "forward": forward, "lm_head": lm_head,
             "attention_scores": attention_scores, "update": update, "clip": clip,
             "matmul_oneflow": lambda: flow.matmul(fa, fb), "matmul_numpy": lambda: a @ b}
    return parts, n


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iters", type=int, default=3)
    args = parser.parse_args(argv)

    parts, n = build_parts()
    for fn in parts.values():
        fn()
    results = {name: [] for name in parts}
    for _ in range(args.repeats):
        for name, fn in parts.items():
            results[name].append(timed(fn, args.iters if "matmul" not in name else 5))
    med = {name: statistics.median(v) for name, v in results.items()}
    step_s = med["step"]
    print(f"GPT-2 tiny eager step: {step_s * 1000:.0f} ms (median of {args.repeats}; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}, "
          f"load average {os.getloadavg()[0]:.1f})")
    for name in ("forward", "lm_head", "attention_scores", "update", "clip"):
        print(f"  {name:18s} {med[name] * 1000:8.1f} ms  {med[name] / step_s:6.1%} of the step")
    for name in ("matmul_oneflow", "matmul_numpy"):
        print(f"  {name:18s} {2 * n ** 3 / med[name] / 1e9:8.1f} GFLOP/s")


if __name__ == "__main__":
    main()
