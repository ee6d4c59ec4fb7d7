"""The SFT recipes (configs/<family>_sft.py, configs/<family>_lora_sft.py) beyond what every
recipe's --smoke run checks (test_recipes.py): LoRA adapts every projection of every family,
and a recipe pointed at a Hugging Face model directory loads its weights and trains.

Qwen2-7B's embedding has 152,064 rows for its tokenizer's 151,646 ids (Phi-3-mini: 32,064 for
32,011). The trainer sizes ``model.cfg.vocab_size`` by the tokenizer, so the directory's
``config.json`` rows must win or the checkpoint does not fit. The directory here is a tiny
Qwen2 written by libai's ``save_pretrained`` (Hugging Face's file layout) with 352 rows, and the
Qwen2-format tokenizer fixture (300 ids, a ChatML template).
"""
import json
import math
import os
import shutil

import numpy as np
import pytest

from libai.config import LazyConfig, default_argument_parser, instantiate
from libai.data.synthetic_files import write_sft_jsonl
from libai.engine import DefaultTrainer
from libai.engine.cli import load_config
from libai.engine.smoke import apply_smoke
from libai.models import Qwen2ForCausalLM
from libai.models.utils.lora import lora_modules
from libai.utils.parallel_layout import ParallelLayout

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TOKENIZER = os.path.join(REPO, "tests", "fixtures", "hf_tokenizers", "qwen2_bpe")
TINY = dict(vocab_size=352, hidden_size=32, hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=64, max_position_embeddings=64, qkv_bias=True, rope_theta=1e6)


LAYOUT = dict(data_parallel_size=1, tensor_parallel_size=1, pipeline_parallel_size=1)


@pytest.mark.parametrize("family", ["llama", "qwen2", "mistral", "gemma", "qwen3", "phi3"])
def test_lora_recipe_adapts_every_attention_and_mlp_projection_of_its_family(family):
    """Six projections per block (query, key_value, dense; the gated MLP's two inputs and its
    output), whatever the Hugging Face checkpoint calls them (Phi-3 fuses qkv_proj and
    gate_up_proj), and nothing else trains."""
    cfg = LazyConfig.load(os.path.join(REPO, "configs", f"{family}_lora_sft.py"))
    apply_smoke(cfg)  # 2 blocks; base_weights dropped
    with ParallelLayout.from_config(LAYOUT):
        model = instantiate(cfg.model)
    adapted = sorted(name.split(".", 3)[3] for name in lora_modules(model))
    assert adapted == sorted([f"{part}.{leaf}" for part, leaf in [
        ("self_attention", "query"), ("self_attention", "key_value"), ("self_attention", "dense"),
        ("mlp", "dense_h_to_4h"), ("mlp", "dense_h_to_4h_linear"), ("mlp", "dense_4h_to_h")]] * 2)
    trained = {name for name, param in model.named_parameters() if param.requires_grad}
    assert trained and all(".lora_A." in name or ".lora_B." in name for name in trained)


def _model_directory(path):
    with ParallelLayout.from_config(LAYOUT):
        model = Qwen2ForCausalLM(cfg=dict(TINY))
        model.save_pretrained(path)
        embedding = model.model.embed_tokens.weight.to_local().numpy()
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(os.path.join(TOKENIZER, name), path)
    return embedding


def test_qwen2_sft_loads_a_directory_with_more_embedding_rows_than_ids_and_trains(tmp_path):
    model_dir, out = str(tmp_path / "Qwen2-tiny"), str(tmp_path / "out")
    embedding = _model_directory(model_dir)
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as handle:
        assert json.load(handle)["vocab_size"] == 352
    train, valid = (write_sft_jsonl(str(tmp_path / f"{split}.jsonl"), count=12, seed=seed)
                    for split, seed in (("train", 0), ("valid", 1)))
    shape = [f"model.cfg.{key}={value}" for key, value in TINY.items() if key != "vocab_size"]
    args = default_argument_parser().parse_args([
        "--config-file", os.path.join(REPO, "configs", "qwen2_sft.py"), *shape,
        f"train.load_weight={model_dir}", f"tokenization.tokenizer.pretrained_model_name_or_path={model_dir}",
        f"dataloader.train.dataset.0.dataset.source={train}", f"dataloader.test.0.dataset.source={valid}",
        "dataloader.train.dataset.0.dataset.max_seq_length=64", "dataloader.test.0.dataset.max_seq_length=64",
        "train.train_epoch=0", "train.train_iter=2", "train.num_accumulation_steps=1", "train.train_micro_batch_size=2",
        "train.evaluation.eval_period=2", "train.evaluation.eval_iter=1", "train.dist.pipeline_num_layers=2",
        "train.log_period=1",
        "graph.enabled=False", "train.zero_optimization.enabled=False", f"train.output_dir={out}"])
    cfg = load_config(args)
    trainer = DefaultTrainer(cfg)
    trainer.resume_or_load(resume=False)
    assert cfg.model.cfg.vocab_size == 352  # the checkpoint's rows, not the tokenizer's 300 ids
    loaded = trainer.model.model.embed_tokens.weight.to_local().numpy()
    np.testing.assert_array_equal(loaded, embedding)
    trainer.train()
    with open(os.path.join(out, "metrics.json"), encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    losses = [line["total_loss"] for line in lines if "total_loss" in line]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    assert any(math.isfinite(line.get("response_loss", math.nan)) for line in lines)
