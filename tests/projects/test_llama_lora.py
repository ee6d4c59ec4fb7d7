"""The Llama LoRA project, run as its README says (shrunken): a base model pretrained on one
real corpus, LoRA-tuned on another; validation perplexity on the second falls, the base
weights stay bit-identical (save_adapter.py checks and fails otherwise) and the adapter file
holds only adapter tensors."""
import os

from safetensors.numpy import load_file

from tests.projects.lm_project_runs import REPO, perplexities, preprocess, run, train_vocab

PROJECT = os.path.join(REPO, "projects", "llama_lora")
SHRINK = ["model.cfg.hidden_size=64", "model.cfg.hidden_layers=2", "model.cfg.intermediate_size=128",
          "train.dist.pipeline_num_layers=2", "train.train_micro_batch_size=8"]


def test_readme_commands_tune_only_the_adapter_and_lower_perplexity(tmp_path):
    data = tmp_path / "data" / "llama_lora"
    run(os.path.join(REPO, "projects", "gpt2_tiny_pretrain", "make_corpus.py"),
        "--output", str(data / "pydoc.jsonl"), cwd=tmp_path)
    run(os.path.join(PROJECT, "make_docstrings.py"), "--output", str(data / "docstrings.jsonl"),
        cwd=tmp_path)
    train_vocab(data, "pydoc.jsonl", cwd=tmp_path)
    for name in ("pydoc", "docstrings"):
        preprocess(data, f"{name}.jsonl", name, cwd=tmp_path)
    base, lora = tmp_path / "base", tmp_path / "lora"
    run(os.path.join(REPO, "tools", "train_net.py"), "--config-file",
        os.path.join(PROJECT, "configs", "llama_base_pydoc.py"), *SHRINK, "train.train_iter=30",
        "train.evaluation.eval_period=30", f"train.output_dir={base}", cwd=tmp_path)
    run(os.path.join(REPO, "tools", "train_net.py"), "--config-file",
        os.path.join(PROJECT, "configs", "llama_lora_docstrings.py"),
        *[f"model.model.{s[len('model.'):]}" if s.startswith("model.") else s for s in SHRINK],
        f"model.base_weights={base}/model_final", "train.train_iter=40",
        "train.evaluation.eval_period=20", f"train.output_dir={lora}", cwd=tmp_path)
    ppl = perplexities(lora)
    assert len(ppl) == 2 and ppl[1] < ppl[0] < 2048, ppl
    adapter = tmp_path / "adapter"
    out = run(os.path.join(PROJECT, "save_adapter.py"), "--config-file",
              os.path.join(PROJECT, "configs", "llama_lora_docstrings.py"),
              "--checkpoint", str(lora / "model_final"), "--base", str(base / "model_final"),
              "--output", str(adapter), "--opts",
              *[f"model.model.{s[len('model.'):]}" for s in SHRINK if s.startswith("model.")],
              f"model.base_weights={base}/model_final", cwd=tmp_path)
    assert "bit-identical to" in out and ": 19 of 19" in out, out
    names = sorted(load_file(str(adapter / "adapter_model.safetensors")))
    assert len(names) == 2 * 2 * 2 and all(".lora_A." in n or ".lora_B." in n for n in names)
