#!/usr/bin/env python
"""What the checkpoint checksums cost: saving and verifying a checkpoint of about 1 GB.

    .venv/bin/python benchmarks/bench_checksum.py [--gb 1.0] [--repeats 3] [--dir /path/on/disk]

A model of ``--gb`` gigabytes of float32 weights (eight linear layers) is saved with
``Checkpointer.save`` ``--repeats`` times into ``--dir`` (default: a temporary folder on the
disk's file system, not memory). Each save records every file's xxh3-64 checksum in the
manifest, read back right after the write (``libai.utils.checkpoint_files.file_checksum``); the
script times those checksum passes alone over the same files and prints their share of the save,
then the time to verify the checkpoint on load (sizes + checksums) against sizes alone. The
issue's aim: checksums under 5% of the save time.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=1.0, help="checkpoint size in GB (1e9 bytes)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    args = parser.parse_args()

    import libai  # noqa: F401  (OneFlow's runtime set-up)
    import oneflow as flow
    from libai.utils.checkpoint import Checkpointer
    from libai.utils.checkpoint_files import file_checksum, verify_checkpoint

    side = int((args.gb * 1e9 / 4 / 8) ** 0.5)
    model = flow.nn.Sequential(*[flow.nn.Linear(side, side, bias=False) for _ in range(8)])
    nbytes = sum(p.numel() for p in model.parameters()) * 4
    root = tempfile.mkdtemp(prefix="libai-bench-checksum-", dir=args.dir or "/var/tmp")
    saves, hashes, verify_full, verify_sizes = [], [], [], []
    try:
        for turn in range(args.repeats):
            start = time.perf_counter()
            path = Checkpointer(model, root).save(f"model_{turn:07d}")
            saves.append(time.perf_counter() - start)
            files = [os.path.join(d, n) for d, _, ns in os.walk(path) for n in ns]
            start = time.perf_counter()
            for f in files:
                file_checksum(f)
            hashes.append(time.perf_counter() - start)
            start = time.perf_counter()
            verify_checkpoint(path, checksums=True)
            verify_full.append(time.perf_counter() - start)
            start = time.perf_counter()
            verify_checkpoint(path, checksums=False)
            verify_sizes.append(time.perf_counter() - start)
            shutil.rmtree(path)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = statistics.median
    cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
    print(f"{time.strftime('%Y-%m-%d')}, {cpu}, {nbytes / 1e9:.2f} GB checkpoint in {root}, "
          f"{args.repeats} saves (medians)")
    print(f"save (with checksums)      {med(saves):8.3f} s")
    print(f"checksums alone            {med(hashes):8.3f} s  "
          f"({nbytes / 1e9 / med(hashes):.1f} GB/s)")
    print(f"checksum share of the save {100 * med(hashes) / med(saves):8.1f} %")
    print(f"verify on load: sizes + checksums {med(verify_full):.3f} s, sizes alone "
          f"{med(verify_sizes):.4f} s")


if __name__ == "__main__":
    main()
