#!/usr/bin/env python
"""Planned vs measured memory: ``libai.plan`` against real training steps on this machine.

For each model (GPT-2 tiny and small, BERT, T5, ViT, Llama; one process, Eager, fp32 on the CPU)
a fresh child process plans the run with ``libai.plan``, then builds the real model and
optimizer and trains ``--steps`` steps on synthetic batches of the planned shape, and reports:

- parameter, gradient and optimizer-state bytes: the sums over the real tensors
  (``numel × element_size`` of every parameter, ``.grad`` and optimizer state tensor), which
  must equal the plan's exactly;
- the peak memory of the steps: Linux's ``VmHWM`` (peak resident set) of the child, reset with
  ``/proc/self/clear_refs`` just before the model is built, minus the resident set at that
  moment. Every byte OneFlow allocates for a CPU tensor is anonymous memory that is written
  (weights are drawn, gradients and optimizer state zero-filled, activations computed), so it
  is resident; the process holds nothing else that grows during the steps. ``tracemalloc``
  would see only Python's own allocations, not OneFlow's, and OneFlow 0.9 reports no allocator
  statistics for the CPU, so the peak resident set in a fresh process is the measure;
- measured "beyond states" = that peak − the measured model states, against the plan's total −
  its model states (activations, transient, communication and registered buffers, allocator:
  what OneFlow's caching allocator loses from the second step on, ``libai.plan.memory``);
- the same peak after the first step alone ("first step peak"), and how much the peak grew in
  the last step (0 once the footprint is steady: each step ends with a synchronisation, as a
  trainer reading its loss every step does). OneFlow's eager allocator
  (``vm::BinAllocator``, the same for every device type) never returns a block it has taken
  (only wholly free blocks, and only when an allocation fails), so the resident set is its
  footprint: live tensors plus the free pieces it keeps. After the first step the gradients and
  optimizer state sit in pieces the first forward freed, and a later forward can need new blocks
  for its largest tensors: the difference between the two peaks is that fragmentation.

``--parallel`` adds DP=2, TP=2, PP=2 and DP×TP 2×2 launches of GPT-2 tiny (OneFlow's launcher,
processes on this machine), where each rank compares its local shards' bytes with the plan's
numbers for its stage.

    python benchmarks/plan_vs_measured.py [--cases gpt2_tiny,bert] [--steps 6] [--parallel [--layouts pp]]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

# name -> (config file, overrides, batch size, tokens per sample)
CASES: Dict[str, Any] = {
    "gpt2_tiny": ("configs/gpt2_pretrain.py", [
        "model.cfg.hidden_layers=4", "model.cfg.hidden_size=256", "model.cfg.num_attention_heads=8",
        "model.cfg.intermediate_size=1024", "model.cfg.vocab_size=8192", "model.cfg.max_seq_length=256"], 8, 256),
    "gpt2_small": ("configs/gpt2_pretrain.py", ["model.cfg.max_seq_length=512"], 2, 512),
    "bert": ("configs/bert_large_pretrain.py", [
        "model.cfg.hidden_layers=4", "model.cfg.hidden_size=256", "model.cfg.num_attention_heads=8",
        "model.cfg.intermediate_size=1024", "model.cfg.vocab_size=8192",
        "model.cfg.max_position_embeddings=256"], 8, 256),
    "t5": ("configs/t5_large_pretrain.py", [
        "model.cfg.hidden_layers=2", "model.cfg.decoder_layers=2", "model.cfg.hidden_size=256",
        "model.cfg.num_attention_heads=8", "model.cfg.intermediate_size=1024", "model.cfg.vocab_size=8192",
        "model.cfg.max_position_embeddings=256"], 8, 256),
    "vit": ("configs/vit_imagenet.py", [
        "model.embed_dim=192", "model.depth=6", "model.num_heads=3", "model.img_size=224",
        "model.patch_size=16"], 16, None),
    "llama": ("configs/gpt2_pretrain.py", ["model.cfg.hidden_layers=4", "model.cfg.hidden_size=256",
        "model.cfg.num_attention_heads=8", "model.cfg.num_key_value_heads=8", "model.cfg.intermediate_size=688",
        "model.cfg.vocab_size=8192", "model.cfg.max_position_embeddings=256"], 8, 256),
    "llama_lora": ("configs/llama_lora_finetune.py", [
        "model.model.cfg.hidden_layers=4", "model.model.cfg.max_position_embeddings=256",
        "model.base_weights=None", "dataloader.train.dataset.0.max_seq_length=256"], 8, 256),
    # CNNs and a user's model: planned through the shape pass (libai.plan.trace); the image size
    # is the loader's (ResNet, AlexNet) or the model's (Swin), the MNIST model's from its first layer
    "resnet": ("configs/resnet50_imagenet.py", ["dataloader.train.dataset.0.transform.size=64",
                                                "train.amp.enabled=False"], 16, None),
    "alexnet": ("configs/alexnet_imagenet_ofrecord.py", ["dataloader.train.dataset.0.transform.size=128",
                                                         "model.hidden_size=1024"], 32, None),
    "swin": ("configs/swin_cifar100.py", [], 32, None),
    "mnist": ("projects/MNIST/configs/config.py", [], 98304, None),
}
# models a recipe does not carry: the case's config takes this model node (module, function or node)
MODEL_NODES = {"llama": ("configs.common.models.llama", "llama_tiny"),
               "swin": ("configs.common.models.swin", "model")}  # the small CPU Swin, 32² images
COMMON = ["train.amp.enabled=False", "train.activation_checkpoint.enabled=False", "graph.enabled=False",
          "train.num_accumulation_steps=None", "train.global_batch_size=None"]


def _kib(name: str) -> int:
    text = open("/proc/self/status").read()
    return int(re.search(rf"{name}:\s+(\d+)", text).group(1)) * 1024


def load_case(name: str, extra: List[str] = ()):
    """The config of ``name`` with its sizes, and its micro-batch and tokens per sample."""
    from libai.config import LazyConfig

    path, overrides, batch, seq = CASES[name]
    cfg = LazyConfig.load(os.path.join(REPO_ROOT, path))
    if name in MODEL_NODES:
        import importlib

        import copy

        module, function = MODEL_NODES[name]
        node = getattr(importlib.import_module(module), function)
        cfg.model = copy.deepcopy(node) if hasattr(node, "keys") else node()
    return cfg, list(overrides) + COMMON + [f"train.train_micro_batch_size={batch}"] + list(extra), batch, seq


def synthetic_batch(model: Any, batch: int, seq: int, shape: Any) -> Dict[str, Any]:
    """Inputs for ``model.forward`` by argument name, of the planned shape."""
    import inspect

    import oneflow as flow

    names = inspect.signature(type(model).forward).parameters
    vocab = next((m.dims["vocab"] for m in shape.of_kind("embedding")), 2)
    out: Dict[str, Any] = {}
    for name in names:
        if name == "labels" and ("images" in names or "inputs" in names):
            continue
        if name in ("input_ids", "encoder_input_ids", "decoder_input_ids", "labels", "lm_labels") and seq:
            out[name] = flow.randint(0, vocab, (batch, seq), dtype=flow.int64)
        elif name == "tokentype_ids":
            out[name] = flow.zeros(batch, seq, dtype=flow.int64)
        elif name == "attention_mask" and "input_ids" in names:
            out[name] = flow.ones(batch, seq, dtype=flow.int64)
        elif name.endswith("_attn_mask") and seq:  # T5: [batch, query, key], as its dataset makes them
            out[name] = flow.ones(batch, seq, seq, dtype=flow.int64)
        elif name == "ns_labels":
            out[name] = flow.randint(0, 2, (batch,), dtype=flow.int64)
        elif name == "loss_mask":
            out[name] = flow.ones(batch, seq, dtype=flow.float32)
        elif shape.trace is not None and name in shape.trace.inputs and "label" not in name:
            # the sample the shape pass gave forward (images, a user model's inputs)
            out[name] = flow.randn(batch, *shape.trace.inputs[name][1:])
            classes = [m.out_features for m in model.modules() if hasattr(m, "out_features")][-1]
            out["labels"] = flow.randint(0, int(classes), (batch,), dtype=flow.int64)
        elif name == "images":
            img = int(model.patch_embed.img_size[0]) if hasattr(model.patch_embed, "img_size") else 224
            out[name] = flow.randn(batch, 3, img, img)
            classes = [m.dims["out"] for m in shape.of_kind("linear")][-1]  # the head
            out["labels"] = flow.randint(0, int(classes), (batch,), dtype=flow.int64)
    return out


def state_bytes(model: Any, optimizer: Any) -> Dict[str, int]:
    """Bytes of the real parameters, gradients and optimizer state (this rank's shards)."""
    def local(t: Any) -> int:
        t = t.to_local() if t.is_global else t
        return t.numel() * t.element_size()

    params = list(model.parameters())
    grads = sum(local(p.grad) for p in params if p.grad is not None)
    state = 0
    for p in params:
        for value in optimizer._state.get(p, {}).values() if p in optimizer._state else []:
            if hasattr(value, "numel"):
                state += local(value)
    return dict(parameters=sum(local(p) for p in params), gradients=grads, optimizer=state)


def child(name: str, steps: int, out_path: str, extra: List[str]) -> None:
    import libai
    import oneflow as flow

    from libai.config import instantiate
    from libai.optim import build_optimizer
    from libai.utils import distributed as dist

    cfg, overrides, batch, seq = load_case(name, extra)
    plan = libai.plan(cfg, check_data=False, overrides=overrides, device="cpu")
    plan.check()
    seq = plan.run.seq
    rank = dist.get_rank()
    stage_plan = plan.memory[plan.run.stage_of_layer[0] if plan.run.pp == 1 else rank // (plan.run.dp * plan.run.tp)]
    cfg = plan_cfg = LazyConfig_apply(cfg, overrides)
    layout = dist.ParallelLayout.from_config(plan_cfg.train.dist)
    inputs = None
    base = _kib("VmRSS")
    open("/proc/self/clear_refs", "w").write("5")
    with layout:
        flow.manual_seed(0)
        node = plan_cfg.model
        model = dist.convert_to_distributed_default_setting(instantiate(node))
        optimizer = build_optimizer(plan_cfg.optim, model)
        inputs = synthetic_batch(model, batch, seq, plan.model)
        inputs = {k: layout.to_global(v, [flow.sbp.split(0), flow.sbp.broadcast]) for k, v in inputs.items()}
        model.train()
        step_peaks: List[int] = []
        for _ in range(steps):
            out = model(**inputs)
            loss = sum(v.mean() if v.ndim else v for k, v in out.items() if "loss" in k)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            flow._oneflow_internal.eager.Sync()  # as a trainer reading its loss every step
            step_peaks.append(_kib("VmHWM") - base)  # [0]: the first step alone ("first step")
        float(loss.to_local().sum()) if loss.is_global else float(loss)
    peak = _kib("VmHWM") - base
    measured = state_bytes(model, optimizer)
    input_bytes = sum(v.numel() * v.element_size() for v in inputs.values())
    result = dict(case=name, rank=rank, layout=plan.run.describe(), params=plan.model.num_params,
                  planned=stage_plan.as_dict(),
                  measured=dict(measured, peak=peak, first_peak=step_peaks[0], step_peaks=step_peaks,
                                inputs=input_bytes))
    with open(out_path, "w") as f:
        json.dump(result, f)


def LazyConfig_apply(cfg: Any, overrides: List[str]) -> Any:
    """The config as the trainer sees it: defaults completed, then the overrides."""
    from libai.config import LazyConfig
    from libai.plan.config_checks import complete

    cfg, _ = complete(cfg)
    cfg = LazyConfig.apply_overrides(cfg, overrides)
    if "base_weights" in cfg.model:
        cfg.model.base_weights = None
    return cfg


def run_child(name: str, steps: int, extra: List[str] = ()) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--steps", str(steps),
               "--out", out] + [f"--extra={e}" for e in extra]
        proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800)
        if proc.returncode:
            raise RuntimeError(f"{name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        return json.load(open(out))


def run_parallel(name: str, nproc: int, extra: List[str], steps: int) -> List[Dict[str, Any]]:
    """One launch of ``nproc`` processes; each rank writes its own comparison."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=REPO_ROOT)
        cmd = [sys.executable, "-m", "libai.launch", "--nproc_per_node", str(nproc),
               "--master_port", str(29500 + os.getpid() % 1000), os.path.abspath(__file__), "--child", name,
               "--steps", str(steps), "--out", os.path.join(tmp, "r{rank}.json")] + [f"--extra={e}" for e in extra]
        proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800, env=env)
        if proc.returncode:
            raise RuntimeError(f"{name} {extra} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        return [json.load(open(os.path.join(tmp, f"r{r}.json"))) for r in range(nproc)]


def _mib(x: float) -> str:
    return f"{x / 2 ** 20:,.1f}"


def row(r: Dict[str, Any]) -> List[str]:
    p, m = r["planned"], r["measured"]
    exact = all(int(p[k]) == int(m[k]) for k in ("parameters", "gradients", "optimizer"))
    # everything beyond the model states on both sides: the measured peak holds the
    # communication buffers and registered buffers too
    plan_act = p["total"] - p["parameters"] - p["gradients"] - p["optimizer"]
    meas_act = m["peak"] - m["parameters"] - m["gradients"] - m["optimizer"]
    peaks = m.get("step_peaks") or [m["peak"]]
    last_growth = peaks[-1] - peaks[-2] if len(peaks) > 1 else 0
    return [r["case"], r["layout"], str(r["rank"]), f"{r['params']:,}", _mib(p["parameters"]), _mib(m["parameters"]),
            _mib(p["gradients"]), _mib(m["gradients"]), _mib(p["optimizer"]), _mib(m["optimizer"]),
            "yes" if exact else "NO", _mib(plan_act), _mib(meas_act), f"{plan_act / meas_act - 1:+.1%}",
            _mib(p["total"]), _mib(m["peak"]), f"{p['total'] / m['peak'] - 1:+.1%}",
            _mib(m["first_peak"]), f"{p['total'] / m['first_peak'] - 1:+.1%}", _mib(last_growth)]


HEADER = ["model", "layout", "rank", "params", "plan params MiB", "real", "plan grads", "real", "plan optim",
          "real", "exact", "plan beyond states", "measured beyond states", "diff", "plan total",
          "measured peak", "diff", "first step peak", "diff", "last step growth"]
LAYOUTS = {"dp": (2, ["train.dist.data_parallel_size=2"]), "tp": (2, ["train.dist.tensor_parallel_size=2"]),
           "pp": (2, ["train.dist.pipeline_parallel_size=2", "train.dist.pipeline_num_layers=4"]),
           "dp_tp": (4, ["train.dist.data_parallel_size=2", "train.dist.tensor_parallel_size=2"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--steps", type=int, default=6,
                    help="training steps measured; the footprint stops growing after 6 (docs/preflight.md)")
    ap.add_argument("--parallel", action="store_true", help="also DP/TP/PP 2 and 2×2 launches")
    ap.add_argument("--layouts", default=",".join(LAYOUTS),
                    help=f"with --parallel, which launches of GPT-2 tiny: {','.join(LAYOUTS)}")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--extra", action="append", default=[], help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None, help="write every row as JSON here")
    args = ap.parse_args()
    if args.child:
        out = args.out.replace("{rank}", os.environ.get("RANK", "0"))
        return child(args.child, args.steps, out, args.extra)
    from tabulate import tabulate

    results, failures = [], []
    for name in filter(None, args.cases.split(",")):
        try:
            results.append(run_child(name, args.steps))
        except RuntimeError as exc:  # report it and go on with the other models
            failures.append(str(exc))
    if args.parallel:
        unknown = set(args.layouts.split(",")) - set(LAYOUTS)
        if unknown:
            ap.error(f"unknown --layouts {sorted(unknown)}; choose from {','.join(LAYOUTS)}")
        for nproc, extra in (LAYOUTS[k] for k in args.layouts.split(",")):
            try:
                results += run_parallel("gpt2_tiny", nproc, extra, args.steps)
            except RuntimeError as exc:
                failures.append(str(exc))
    print(tabulate([row(r) for r in results], headers=HEADER, tablefmt="github", disable_numparse=True))
    for failure in failures:
        print("FAILED:", failure[-3000:])
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
