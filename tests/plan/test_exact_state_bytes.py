"""Planned parameter, gradient and optimizer-state bytes equal the real tensors exactly, for GPT-2,
BERT, T5, ViT, Llama and a LoRA-adapted Llama (frozen base: no gradients or state for it), built
and trained one step in this process. benchmarks/plan_vs_measured.py does the same at larger
sizes, under DP/TP/PP 2 and 2×2, and measures activation memory too."""
import importlib.util
import os

import pytest

import libai

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "plan_vs_measured", os.path.join(REPO, "benchmarks", "plan_vs_measured.py"))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

_TEXT = ["model.cfg.hidden_size=64", "model.cfg.vocab_size=512", "model.cfg.hidden_layers=2"]
SMALL = {
    "gpt2_tiny": _TEXT + ["model.cfg.max_seq_length=16"],
    "bert": _TEXT + ["model.cfg.max_position_embeddings=16"],
    "t5": _TEXT + ["model.cfg.max_position_embeddings=16", "model.cfg.decoder_layers=1"],
    "vit": ["model.img_size=32", "model.patch_size=8", "model.depth=2"],
    "llama": _TEXT + ["model.cfg.max_position_embeddings=16", "model.cfg.intermediate_size=176"],
    "llama_lora": ["model.model.cfg.max_position_embeddings=16"],
}


@pytest.mark.parametrize("case", sorted(SMALL))
def test_planned_model_states_equal_the_real_tensors(case):
    import oneflow as flow

    from libai.config import instantiate
    from libai.optim import build_optimizer
    from libai.utils import distributed as dist

    cfg, overrides, _, _ = bench.load_case(case, SMALL[case] + ["train.train_micro_batch_size=2"])
    plan = libai.plan(cfg, check_data=False, overrides=overrides, device="cpu")
    assert plan.ok, plan.format()
    cfg = bench.LazyConfig_apply(cfg, overrides)
    with dist.ParallelLayout.from_config(cfg.train.dist, world_size=1, rank=0):
        flow.manual_seed(0)
        model = instantiate(cfg.model)
        optimizer = build_optimizer(cfg.optim, model)
        out = model(**bench.synthetic_batch(model, 2, plan.run.seq, plan.model))
        sum(v.mean() for k, v in out.items() if "loss" in k).backward()
        optimizer.step()
    real = bench.state_bytes(model, optimizer)
    planned = plan.memory[0]
    assert (planned.parameters, planned.gradients, planned.optimizer) == (
        real["parameters"], real["gradients"], real["optimizer"])
    assert plan.model.num_params == sum(p.numel() for p in model.parameters())
    if case == "llama_lora":  # only the adapters train
        assert 0 < real["gradients"] < real["parameters"] / 10
