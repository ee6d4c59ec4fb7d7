"""What checksumming a checkpoint costs: hashing time as a fraction of the save time, 1 GB.

    python benchmarks/bench_checkpoint_checksums.py                # ~1 minute, writes 1 GB twice
    python benchmarks/bench_checkpoint_checksums.py --gib 0.25 --repeats 3 --dir /mnt/fast

A model of float32 ``Linear`` layers holding ``--gib`` GiB of weights is saved with
``Checkpointer.save`` into ``--dir`` (a temporary folder by default). The save's wall time is
measured whole (gather, ``flow.save``, syncfs, hashing, manifest, renames) and the hashing
(:func:`libai.utils.checkpoint_files.hash_files`, which re-reads every file after the sync,
from the page cache) separately by wrapping it. The ratio printed is hashing time over the save
time without it. Each repeat writes a fresh checkpoint; the ratio is over all repeats together (a shared
machine's save times vary by 2x from one repeat to the next). Results: benchmarks/results/checkpoint_checksums.md.
"""
import argparse
import os
import platform
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (before oneflow)
import oneflow as flow  # noqa: E402

from libai.utils import checkpoint_files  # noqa: E402
from libai.utils.checkpoint import Checkpointer  # noqa: E402


def _model(gib: float) -> flow.nn.Module:
    side = 4096  # one 4096 x 4096 float32 layer is 64 MiB
    layers = max(1, round(gib * 1024 / 64))
    with flow.no_grad():
        return flow.nn.Sequential(*[flow.nn.Linear(side, side, bias=False) for _ in range(layers)])


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dir", default=None, help="where to save (default: a temporary folder)")
    args = parser.parse_args()
    model = _model(args.gib)
    size = sum(p.numel() * 4 for p in model.parameters())
    hashing = []
    original = checkpoint_files.hash_files

    def timed(root, rels):
        start = time.perf_counter()
        try:
            return original(root, rels)
        finally:
            hashing.append(time.perf_counter() - start)

    checkpoint_files.hash_files = timed
    root = tempfile.mkdtemp(dir=args.dir)
    saves = []
    try:
        for i in range(args.repeats):
            start = time.perf_counter()
            Checkpointer(model, root).save(f"model_{i:07d}")
            saves.append(time.perf_counter() - start)
            shutil.rmtree(os.path.join(root, f"model_{i:07d}"))
    finally:
        checkpoint_files.hash_files = original
        shutil.rmtree(root, ignore_errors=True)
    rows = [(s, h, h / (s - h)) for s, h in zip(saves, hashing)]
    total = sum(hashing) / (sum(saves) - sum(hashing))
    print(f"checkpoint {size / 2**30:.2f} GiB, {args.repeats} saves, on {_cpu()}, {time.strftime('%Y-%m-%d')}")
    for s, h, r in rows:
        print(f"  save {s:6.2f} s   hashing {h:5.2f} s ({size / h / 2**30:4.1f} GiB/s)   ratio {100 * r:4.1f}%")
    print(f"hashing / save without hashing: {100 * total:.1f}% (all repeats together)")


if __name__ == "__main__":
    main()
