"""A rank for launcher tests that needs no OneFlow (starts in a fraction of a second).

    launch_probe.py env OUT          write this rank's launch environment to OUT.rank<r> (JSON)
    launch_probe.py wait OUT         write its pid to OUT.rank<r>.pid, then wait for a signal;
                                     on SIGTERM/SIGINT/SIGUSR1 write the signal's name to
                                     OUT.rank<r>.signal and exit 0 (what a libai rank does after
                                     saving its checkpoint)
    launch_probe.py fail OUT R CODE  like ``wait``, but rank R exits with CODE after 0.3 s and the
                                     other ranks ignore SIGTERM (a rank stuck in a collective)
"""
import json
import os
import signal
import sys
import time

KEYS = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "GLOG_log_dir", "OMP_NUM_THREADS")


def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    rank = os.environ["RANK"]
    prefix = f"{out}.rank{rank}"
    if mode == "env":
        with open(prefix, "w") as f:
            json.dump({k: os.environ.get(k) for k in KEYS}, f)
        return

    def on_signal(signum, frame):
        with open(prefix + ".signal", "w") as f:
            f.write(signal.Signals(signum).name)
        sys.exit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, on_signal)
    if mode == "fail":
        failing_rank, code = sys.argv[3], int(sys.argv[4])
        if rank != failing_rank:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(prefix + ".pid.tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(prefix + ".pid.tmp", prefix + ".pid")
    if mode == "fail" and rank == failing_rank:
        time.sleep(0.3)
        sys.exit(code)
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    main()
