#!/usr/bin/env python
"""What the hang watchdog costs a training step: its marks, with its thread running.

    .venv/bin/python benchmarks/bench_watchdog_overhead.py     # ~5 s

A step marks ``begin``/``end`` (two clock reads and a tuple store); the thread wakes every
``poll`` seconds (here 0.05 s, 200x more often than the default settings' 10 s) to write the
heartbeat file. Timed: 200,000 empty marked steps against 200,000 empty unmarked ones, and the
thread's CPU share while it watches. Results: benchmarks/results/watchdog_overhead.md.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from libai.engine.watchdog import Watchdog, WatchdogSettings  # noqa: E402


def main() -> None:
    n = 200_000
    with tempfile.TemporaryDirectory() as out:
        dog = Watchdog(WatchdogSettings(floor=0.2, timeout=10.0), out).start()
        start = time.perf_counter()
        for i in range(n):
            pass
        bare = time.perf_counter() - start
        cpu, start = time.process_time(), time.perf_counter()
        for i in range(n):
            dog.begin("training step", i)
            dog.end()
        marked = time.perf_counter() - start
        time.sleep(2.0)
        idle_cpu = time.process_time() - cpu
        dog.stop()
    print(f"{time.strftime('%Y-%m-%d')}: marks {1e6 * (marked - bare) / n:.2f} us per step "
          f"(poll {dog.settings.poll:.2f} s); thread CPU while watching an idle process: "
          f"{1e3 * (idle_cpu - marked):.1f} ms over 2 s")


if __name__ == "__main__":
    main()
