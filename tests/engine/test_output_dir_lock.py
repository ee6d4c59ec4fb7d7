"""``main`` (tools/train_net.py) owns ``train.output_dir`` for the run: a training run, a
``--resume`` and an ``--eval-only`` into a directory that a live run holds are all refused before
they write anything (libai.utils.run_lock; the launcher-level cases are in test_launcher.py)."""
import os
import socket
import subprocess
import sys

import pytest

from libai.config import default_argument_parser
from libai.engine.cli import main
from libai.utils.run_lock import LOCK_NAME, OutputDirInUse
from mnist_helpers import MNIST_CONFIG, REPO, quick_overrides

HOLD = ("import sys; sys.path.insert(0, sys.argv[1]); from libai.utils.run_lock import RunLock; "
        "RunLock(sys.argv[2], ['train_net.py', '--the-first-run']).acquire(); print('held', flush=True); "
        "sys.stdin.read()")


@pytest.mark.parametrize("flags", [[], ["--resume"], ["--eval-only"]], ids=["train", "resume", "eval-only"])
def test_a_run_into_a_directory_held_by_a_live_run_is_refused_before_writing(digits_dir, tmp_path, flags):
    out = str(tmp_path / "run")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, REPO, out], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        args = default_argument_parser().parse_args(
            ["--config-file", MNIST_CONFIG, *flags, *quick_overrides(digits_dir, out)])
        with pytest.raises(OutputDirInUse) as refusal:
            main(args)
        assert f"belongs to another run (it is running): pid {holder.pid} on host {socket.gethostname()}" \
               in str(refusal.value)
        assert "command: train_net.py --the-first-run." in str(refusal.value)
        assert os.listdir(out) == [LOCK_NAME]  # no config.yaml, log.txt, metrics or checkpoint
    finally:
        holder.communicate("")
    assert not os.path.exists(os.path.join(out, LOCK_NAME))  # the holder released it on exit
