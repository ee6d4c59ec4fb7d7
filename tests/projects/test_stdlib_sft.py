"""The stdlib SFT project as its README runs it, shrunk: data from the standard library, a base
model pretrained on docstrings, fine-tuned on chats; the response-only loss of held-out functions
falls, the exported Hugging Face directory evaluates under lm_eval's local task, and a chat
through the template answers."""
import json
import os

import oneflow as flow
import pytest

from libai.config import LazyConfig
from libai.engine import DefaultTrainer
from libai.engine.cli import evaluate_only
from projects.stdlib_sft import make_data
from projects.stdlib_sft.export_hf import export

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(REPO, "projects", "stdlib_sft", "configs")
SHRINK = ["model.cfg.hidden_size=32", "model.cfg.hidden_layers=2", "model.cfg.intermediate_size=64",
          "train.dist.pipeline_num_layers=2", "train.train_micro_batch_size=8", "train.log_period=5"]


def _config(config, data, overrides):
    cfg = LazyConfig.load(os.path.join(CONFIGS, config))
    LazyConfig.apply_overrides(cfg, SHRINK + overrides)
    _point_at(cfg, str(data))
    return cfg


def _train(config, data, overrides):
    cfg = _config(config, data, overrides)
    trainer = DefaultTrainer(cfg)
    trainer.resume_or_load(resume=False)
    trainer.train()
    with open(os.path.join(cfg.train.output_dir, "metrics.json"), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _point_at(node, data):
    """The configs' ``data/stdlib_sft/...`` paths, moved under ``data``."""
    if hasattr(node, "keys"):
        for key in list(node.keys()):
            value = node[key]
            if isinstance(value, str) and value.startswith("data/stdlib_sft"):
                node[key] = data + value[len("data/stdlib_sft"):]
            else:
                _point_at(value, data)
    elif isinstance(node, (list, tuple)) or type(node).__name__ == "ListConfig":
        for item in node:
            _point_at(item, data)


def test_readme_steps_lower_the_response_loss_and_evaluate_with_lm_eval(tmp_path):
    data = tmp_path / "data"
    sizes = make_data.make(str(data), vocab_size=512)
    assert sizes["train"] > 500 and sizes["test"] > 50  # real functions, split by name
    train_names = {json.loads(l)["messages"][0]["content"] for l in open(data / "train.jsonl")}
    assert not any(f"What does {json.loads(l)['name']} do?" in train_names for l in open(data / "test.jsonl"))
    base, sft = tmp_path / "base", tmp_path / "sft"
    vocab = ["model.cfg.vocab_size=512"]
    _train("pretrain.py", data, vocab + ["train.train_iter=10", f"train.output_dir={base}",
                                         "train.checkpointer.period=10"])
    lines = _train("sft.py", data, vocab + [
        "train.train_iter=40", "train.evaluation.eval_period=40", "train.checkpointer.period=40",
        "optim.lr=3e-3",
        f"train.output_dir={sft}", f"train.load_weight={base}/model_final",
        "train.test_micro_batch_size=98"])
    after = [line["response_loss"] for line in lines if "response_loss" in line][-1]
    before = evaluate_only(_config("sft.py", data, vocab + [
        f"train.load_weight={base}/model_final", "train.test_micro_batch_size=98",
        f"train.output_dir={base}_eval"]))["response_loss"]
    assert after < before - 0.5  # fine-tuning taught the answer format on unseen functions

    export(str(sft), str(tmp_path / "sft_hf"), str(data / "tokenizer"))
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    import lm_eval
    from lm_eval.tasks import TaskManager

    from libai.inference.lm_eval_cli import PretrainedLibaiLM

    lm = PretrainedLibaiLM(pretrained=str(tmp_path / "sft_hf"), batch_size=16)
    results = lm_eval.simple_evaluate(model=lm, tasks=["stdlib_qa"], limit=8, task_manager=TaskManager(
        include_path=str(data / "task"), include_defaults=False))
    assert 0.0 <= results["results"]["stdlib_qa"]["acc,none"] <= 1.0
    prompt = lm.tokenizer.apply_chat_template([{"role": "user", "content": "What does abs do?"}],
                                              add_generation_prompt=True)
    assert lm.tokenizer.decode(prompt).endswith("<|assistant|>\n")
    reply = lm.model.generate(flow.tensor([prompt]), max_new_tokens=4)
    assert reply.shape[1] == len(prompt) + 4
