"""The GPT-2 tiny pretraining project, run as its README says (shrunken): real text made by our
tools, and validation perplexity falls between the two evaluations."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROJECT = os.path.join(REPO, "projects", "gpt2_tiny_pretrain")


def _run(*args, cwd):
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_readme_commands_lower_validation_perplexity(tmp_path):
    data = tmp_path / "data" / "pydoc"
    _run(os.path.join(PROJECT, "make_corpus.py"), "--output", str(data / "corpus.jsonl"), cwd=tmp_path)
    _run(os.path.join(REPO, "tools", "train_vocab.py"), "--input", str(data / "corpus.jsonl"),
         "--json-key", "text", "--vocab-size", "2048", "--output-dir", str(data / "vocab"), cwd=tmp_path)
    _run(os.path.join(REPO, "tools", "preprocess_data.py"), "--input", str(data / "corpus.jsonl"),
         "--json-keys", "text", "--output-prefix", str(data / "pydoc"), "--tokenizer-name",
         "GPT2Tokenizer", "--vocab-file", str(data / "vocab" / "vocab.json"), "--merges-file",
         str(data / "vocab" / "merges.txt"), "--append-eod", cwd=tmp_path)
    assert (data / "pydoc_text_document.bin").stat().st_size > 100_000
    out = tmp_path / "out"
    _run(os.path.join(REPO, "tools", "train_net.py"), "--config-file",
         os.path.join(PROJECT, "configs", "gpt2_tiny_pydoc.py"),
         "model.cfg.hidden_size=64", "model.cfg.hidden_layers=2", "model.cfg.intermediate_size=256",
         "train.dist.pipeline_num_layers=2", "train.train_iter=40",
         "train.evaluation.eval_period=20", f"train.output_dir={out}", cwd=tmp_path)
    with open(out / "metrics.json") as f:
        records = [json.loads(line) for line in f if line.strip()]
    ppl = [r["PPL"] for r in records if "PPL" in r]
    assert len(ppl) == 2, records[-3:]
    assert ppl[1] < ppl[0] < 2048  # better than a uniform guess, and improving
