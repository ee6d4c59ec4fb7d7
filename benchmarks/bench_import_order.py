#!/usr/bin/env python
"""Does the order of ``import libai`` and ``import oneflow`` change the speed? Three orders.

    .venv/bin/python benchmarks/bench_import_order.py            # ~30 s
    .venv/bin/python benchmarks/bench_import_order.py --steps 400

Each order runs in a fresh child process with libai's choice variables removed from its
environment (so that nothing is inherited from this process), one OneFlow thread:

* ``libai first``: ``import libai, oneflow``;
* ``oneflow first``: ``import oneflow, libai`` with no start-up hook (libai warns);
* ``oneflow first + hook``: the same, with ``libai_import_hook.pth`` processed at start-up
  (``site.addsitedir`` on a folder holding it, which is what site-packages does).

Each child times the matrix products of a cached GPT-2 decoding step at batch 1 (the model of
``vs_transformers_generation.py``: 6 layers of hidden 512, FFN 2048, vocabulary 8192: per layer
the QKV, output, FFN-in and FFN-out products of one row, then the LM head), as tokens/s, and
the CPU seconds the process spent per token (OneFlow's scheduler thread spins on a second core
unless libai's choice is made before it starts). Results: benchmarks/results/import_order.md.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CHOICES = ("OPENBLAS_CORETYPE", "LIBAI_OPENBLAS_CORETYPE_CHOSEN", "LIBAI_CBLAS_ROUTE",
            "ONEFLOW_VM_COMPUTE_ON_WORKER_THREAD", "ONEFLOW_ENABLE_ONEDNN_OPTS", "LIBAI_IMPORT_HOOK")

CHILD = r"""
import json, site, sys, time, warnings
order, site_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if site_dir:
    site.addsitedir(site_dir)
warnings.simplefilter("ignore")
if order == "libai":
    import libai, oneflow as flow
else:
    import oneflow as flow, libai
import libai._runtime as runtime
flow.manual_seed(0)
hidden, ffn, vocab, layers = 512, 2048, 8192, 6
shapes = [(3 * hidden, hidden), (hidden, hidden), (ffn, hidden), (hidden, ffn)]
weights = [[flow.randn(*s) * 0.02 for s in shapes] for _ in range(layers)]
head = flow.randn(vocab, hidden) * 0.02
x = flow.randn(1, hidden)

def step():
    h = x
    for qkv, out, up, down in weights:
        a = flow.nn.functional.linear(h, qkv)[:, :hidden]
        h = h + flow.nn.functional.linear(a, out)
        h = h + flow.nn.functional.linear(flow.relu(flow.nn.functional.linear(h, up)), down)
    return flow.nn.functional.linear(h, head).numpy()

for _ in range(10):
    step()
wall, cpu = time.perf_counter(), time.process_time()
for _ in range(steps):
    step()
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({"tokens_per_s": steps / wall, "cpu_per_token_ms": 1e3 * cpu / steps,
                  "lost": runtime.lost_to_import_order(), "route": runtime.matrix_route()["active"]}))
"""


def _run(order: str, site_dir: str, steps: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _CHOICES}
    env.update(PYTHONPATH=REPO, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, order, site_dir, str(steps)], env=env,
                         capture_output=True, text=True, check=True, timeout=600).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    hook_dir = tempfile.mkdtemp()
    shutil.copy(os.path.join(REPO, "libai_import_hook.pth"), hook_dir)
    cases = [("libai first", "libai", ""), ("oneflow first", "oneflow", ""),
             ("oneflow first + hook", "oneflow", hook_dir)]
    results = {name: [] for name, _, _ in cases}
    try:
        for _ in range(args.repeats):  # interleaved, so that a busy second hits every order
            for name, order, site_dir in cases:
                results[name].append(_run(order, site_dir, args.steps))
    finally:
        shutil.rmtree(hook_dir, ignore_errors=True)
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"{time.strftime('%Y-%m-%d')}, {cpu}, {os.cpu_count()} cores, {args.steps} decoding steps "
          f"x {args.repeats} repeats, best repeat")
    print(f"{'order':22} {'tokens/s':>9} {'CPU ms/token':>13}  route  lost choices")
    for name, runs in results.items():
        best = max(runs, key=lambda r: r["tokens_per_s"])
        print(f"{name:22} {best['tokens_per_s']:9.1f} {best['cpu_per_token_ms']:13.2f}  "
              f"{best['route']:5}  {len(best['lost'])}")


if __name__ == "__main__":
    main()
