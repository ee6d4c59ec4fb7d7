"""A rank for launcher tests that needs no OneFlow (starts in a fraction of a second).

    launch_probe.py env OUT          write this rank's launch environment to OUT.rank<r> (JSON)
    launch_probe.py wait OUT         write its pid to OUT.rank<r>.pid, then wait for a signal;
                                     on SIGTERM/SIGINT/SIGUSR1 write the signal's name to
                                     OUT.rank<r>.signal and exit 0 (what a libai rank does after
                                     saving its checkpoint)
    launch_probe.py fail OUT R CODE  like ``wait``, but rank R exits with CODE after 0.3 s and the
                                     other ranks ignore SIGTERM (a rank stuck in a collective)
    launch_probe.py flaky OUT R      every rank appends its arguments to OUT.rank<r>.argv; rank 0
                                     reports OUT's folder as its output dir to libai.launch; rank
                                     R prints a line and exits with 3 the first time (no OUT.failed
                                     yet), the others wait for SIGTERM; on later attempts all exit 0
    launch_probe.py oneflow OUT      import libai, then oneflow (OneFlow's rendezvous), print "joined"
"""
import json
import os
import signal
import sys
import time

KEYS = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "GLOG_log_dir", "OMP_NUM_THREADS")


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--resume"]
    mode, out = args[0], args[1]
    rank = os.environ["RANK"]
    prefix = f"{out}.rank{rank}"
    if mode == "oneflow":
        import libai  # noqa: F401
        import oneflow  # noqa: F401

        print("joined", flush=True)
        return
    if mode == "flaky":
        flaky(out, rank, args[2], prefix)
        return
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


def flaky(out, rank, failing_rank, prefix):
    with open(prefix + ".argv", "a") as f:
        f.write(" ".join(sys.argv[1:]) + "\n")
    if rank == "0" and os.environ.get("LIBAI_LAUNCH_RUN_FILE"):
        with open(os.environ["LIBAI_LAUNCH_RUN_FILE"], "w") as f:
            json.dump({"output_dir": os.path.dirname(out)}, f)
    if os.path.exists(out + ".failed"):
        return
    if rank == failing_rank:
        time.sleep(0.3)
        open(out + ".failed", "w").close()
        print("probe: rank failing on purpose", flush=True)
        sys.exit(3)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    main()
