"""Two processes share one index cache: rank 0 builds it while rank 1 waits, then reads it."""
import json
import os
import textwrap

from libai.utils.testing import launch

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {repo!r})
    import libai
    import numpy as np
    import oneflow as flow
    import libai.data.datasets.gpt_dataset as gpt

    calls = []
    real_build = gpt.build_gpt_indices
    def counting_build(*args, **kwargs):
        calls.append(1)
        return real_build(*args, **kwargs)
    gpt.build_gpt_indices = counting_build

    ds = gpt.GPT2Dataset(data_prefix={prefix!r}, max_seq_length=8, num_samples=30, seed=3, cache_dir={cache!r})
    record = dict(rank=flow.env.get_rank(), builds=len(calls), from_files=bool(ds.index_files),
                  samples=[ds.tokens(k).tolist() for k in range(30)])
    with open({out!r} + str(record["rank"]), "w") as f:
        json.dump(record, f)
    """
)


def test_rank0_builds_rank1_reads(corpus, tmp_path):
    script = tmp_path / "two_ranks.py"
    out = str(tmp_path / "rank")
    script.write_text(SCRIPT.format(repo=REPO_ROOT, prefix=corpus.doc_prefix, cache=str(tmp_path / "cache"), out=out))
    result = launch(str(script), 2, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:]
    records = [json.load(open(out + str(rank))) for rank in (0, 1)]
    assert [r["builds"] for r in records] == [1, 0]  # only rank 0 built the indices
    assert records[1]["from_files"]  # rank 1 read what rank 0 wrote
    assert records[0]["samples"] == records[1]["samples"]
    assert len(os.listdir(tmp_path / "cache")) == 3


FAILING = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r})
    import libai
    import oneflow as flow
    from libai.data.datasets.gpt_dataset import GPT2Dataset

    try:
        GPT2Dataset(data_prefix={prefix!r}, max_seq_length=8, num_samples=0, cache_dir={cache!r})
    except ValueError as exc:
        # Exit normally: the launcher kills every rank as soon as one fails, which would hide
        # whether rank 1 was still waiting.
        # One f-string: the message is one write (the two ranks share the launcher's stdout).
        print(f"rank {{flow.env.get_rank()}} raised: {{exc}}", flush=True)
    """
)


def test_a_failed_build_on_rank0_does_not_leave_rank1_waiting(corpus, tmp_path):
    script = tmp_path / "failing.py"
    script.write_text(FAILING.format(repo=REPO_ROOT, prefix=corpus.doc_prefix, cache=str(tmp_path / "cache")))
    result = launch(str(script), 2, timeout=240)  # a hang would raise TimeoutExpired
    assert result.returncode == 0, result.stdout[-3000:]
    for rank in (0, 1):
        assert f"rank {rank} raised: num_samples must be at least 1" in result.stdout
