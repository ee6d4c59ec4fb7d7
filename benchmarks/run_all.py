#!/usr/bin/env python
"""Run every benchmark in this folder in turn (``make bench``), each in its own process.

Each benchmark prints its own table and ratios; see docs/benchmarks.md for recorded results.
Pass ``--quick`` to forward it to the benchmarks that accept it (a fast smoke run).
"""
import argparse
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="forward --quick where supported")
    args = parser.parse_args()
    failed = []
    for path in sorted(glob.glob(os.path.join(HERE, "bench_*.py"))):
        cmd = [sys.executable, path]
        if args.quick:
            help_text = subprocess.run(cmd + ["--help"], capture_output=True, text=True).stdout
            if "--quick" in help_text:
                cmd.append("--quick")
        print(f"\n=== {os.path.basename(path)}: {' '.join(cmd[1:])}", flush=True)
        if subprocess.run(cmd).returncode != 0:
            failed.append(os.path.basename(path))
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
