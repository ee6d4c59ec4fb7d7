"""The GPT-2 tiny pretraining project, run as its README says (shrunken): real text made by our
tools, and validation perplexity falls between the two evaluations."""
import os

from tests.projects.lm_project_runs import REPO, perplexities, preprocess, run, train_vocab

PROJECT = os.path.join(REPO, "projects", "gpt2_tiny_pretrain")


def test_readme_commands_lower_validation_perplexity(tmp_path):
    data = tmp_path / "data" / "pydoc"
    run(os.path.join(PROJECT, "make_corpus.py"), "--output", str(data / "corpus.jsonl"), cwd=tmp_path)
    train_vocab(data, "corpus.jsonl", cwd=tmp_path)
    preprocess(data, "corpus.jsonl", "pydoc", cwd=tmp_path)
    out = tmp_path / "out"
    run(os.path.join(REPO, "tools", "train_net.py"), "--config-file",
        os.path.join(PROJECT, "configs", "gpt2_tiny_pydoc.py"),
        "model.cfg.hidden_size=64", "model.cfg.hidden_layers=2", "model.cfg.intermediate_size=256",
        "train.dist.pipeline_num_layers=2", "train.train_iter=40",
        "train.evaluation.eval_period=20", f"train.output_dir={out}", cwd=tmp_path)
    ppl = perplexities(out)
    assert len(ppl) == 2, ppl
    assert ppl[1] < ppl[0] < 2048  # better than a uniform guess, and improving
