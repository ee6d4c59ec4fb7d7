"""What the tests of the two language-model projects (gpt2_tiny_pretrain, llama_lora) share:
running a repository script as a README does, turning JSON lines into a GPT-2-tokenised corpus
with the repository's tools, and reading validation perplexities back from ``metrics.json``."""
import json
import os
import subprocess
import sys
from typing import List

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args, cwd) -> str:
    """``python *args`` in ``cwd``; fails the test with the output's tail when it fails."""
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def train_vocab(data, jsonl: str, cwd) -> None:
    """A 2048-token byte-level BPE learned on ``data/jsonl``, written to ``data/vocab``."""
    run(os.path.join(REPO, "tools", "train_vocab.py"), "--input", str(data / jsonl),
        "--json-key", "text", "--vocab-size", "2048", "--output-dir", str(data / "vocab"), cwd=cwd)


def preprocess(data, jsonl: str, prefix: str, cwd) -> None:
    """``data/jsonl`` tokenised with ``data/vocab`` into ``data/{prefix}_text_document``
    (end-of-document tokens appended); the corpus must be real-sized (> 100 kB)."""
    run(os.path.join(REPO, "tools", "preprocess_data.py"), "--input", str(data / jsonl),
        "--json-keys", "text", "--output-prefix", str(data / prefix), "--tokenizer-name",
        "GPT2Tokenizer", "--vocab-file", str(data / "vocab" / "vocab.json"), "--merges-file",
        str(data / "vocab" / "merges.txt"), "--append-eod", cwd=cwd)
    assert (data / f"{prefix}_text_document.bin").stat().st_size > 100_000


def perplexities(output_dir) -> List[float]:
    """The ``PPL`` of every evaluation in ``output_dir/metrics.json``, in order."""
    with open(os.path.join(output_dir, "metrics.json")) as f:
        return [r["PPL"] for r in map(json.loads, filter(str.strip, f)) if "PPL" in r]
