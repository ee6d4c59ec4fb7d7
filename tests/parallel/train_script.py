"""Train a tiny GPT for a few iterations under each layout named on the command line, one
after another in the same processes, and write the per-iteration losses (rank 0) to a JSON file
``{layout: {mode: [loss, ...]}}``; every rank also prints one record
``RESULT rank=<r> <layout>/<mode>=<runner> ... losses=<json>`` naming what ran its steps.

    python train_script.py --out-dir OUT one_process
    python -m oneflow.distributed.launch --nproc_per_node 2 train_script.py --out-dir OUT dp2 tp2 pp2

The layouts (:data:`LAYOUTS`) need as many processes as their sizes multiply to. Running several
in one launch shares the processes' start-up (importing OneFlow) between them; each layout still
builds its own trainer, model, loader and graph from the same seed.

``--sft-modes eager[,graph]`` also trains, in each layout, the supervised fine-tuning recipe
configs/mistral_sft.py as ``tools/train_net.py --smoke`` loads it (a tiny Mistral, stand-in chat
data packed two samples to a row, prompts masked): its losses go under ``sft/<layout>``.
"""
import argparse
import gc
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import libai  # noqa: E402,F401
from omegaconf import OmegaConf  # noqa: E402

from libai.config import LazyCall, default_argument_parser, get_config  # noqa: E402
from libai.data.build import build_nlp_train_loader  # noqa: E402
from libai.data.datasets.synthetic import SyntheticLMDataset  # noqa: E402
from libai.engine import DefaultTrainer, hooks  # noqa: E402
from libai.engine.cli import load_config  # noqa: E402
from libai.engine.trainer import HookBase  # noqa: E402
from libai.models import GPTForPreTraining  # noqa: E402
from libai.utils import distributed as dist  # noqa: E402
from libai.utils.testing import runner_description, write_record  # noqa: E402

LAYERS = 2  # one per stage under PP=2: every stage boundary is still crossed
ITERS = 6  # the first update shows a wrong or unsynchronised shard; a few more let errors grow
GLOBAL_BATCH = 8
# name: data/tensor/pipeline sizes, micro-batches per step (OneFlow 0.9's CPU pipeline graph
# needs 2, see check_supported) and, for the four-process layouts, a shorter run: the first
# 3 iterations of the same schedule (2 updates after the first loss; four processes share two
# cores here).
LAYOUTS = {
    "one_process": dict(),
    "dp2": dict(dp=2),
    "tp2": dict(tp=2, acc=2),
    "pp2": dict(pp=2, acc=2),
    "dp2xtp2": dict(dp=2, tp=2, acc=2, stop_after=3),
    "tp2xpp2": dict(tp=2, pp=2, acc=2, stop_after=3),
}


SFT_RECIPE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "configs", "mistral_sft.py")
SFT_ITERS = 3
SFT_BATCH = 4  # packed rows per step, in every layout (no accumulation: see build_sft_cfg)
SFT_SAMPLE, SFT_PACKED = 72, 144  # the stand-in chats (40-66 tokens) whole, two to a row


class Record(HookBase):
    """Keeps each iteration's loss; with ``stop_after``, ends the run there (every rank at the
    same iteration) while the schedule still spans ``train_iter``, so the losses are a prefix of
    the full run's."""

    def __init__(self, store, stop_after=None):
        self.store = store
        self.stop_after = stop_after

    def after_step(self):
        self.store.append(float(self.trainer.storage.history("total_loss").latest()))
        if self.stop_after is not None and len(self.store) >= self.stop_after:
            self.trainer.request_stop(f"stop after {self.stop_after}", save_checkpoint=False)


class LossOnlyTrainer(DefaultTrainer):
    """The default hooks without the checkpointer: only the losses are compared, and a final
    checkpoint of every layout and mode (a collective save and a file sync per run) would only
    add time."""

    def build_hooks(self):
        return [h for h in super().build_hooks() if not isinstance(h, hooks.PeriodicCheckpointer)]


def build_cfg(out_dir, graph, dp=1, tp=1, pp=1, acc=1):
    cfg = OmegaConf.create()
    cfg.model = LazyCall(GPTForPreTraining)(cfg=dict(
        vocab_size=128, hidden_size=32, hidden_layers=LAYERS, num_attention_heads=4,
        intermediate_size=64, max_seq_length=16, embedding_dropout_prob=0.0,
        attention_dropout_prob=0.0, hidden_dropout_prob=0.0, initializer_range=0.02))
    cfg.train = get_config("common/train.py").train
    cfg.optim = get_config("common/optim.py").optim
    cfg.graph = get_config("common/models/graph.py").graph
    cfg.graph.enabled = graph
    cfg.dataloader = OmegaConf.create()
    cfg.dataloader.train = LazyCall(build_nlp_train_loader)(
        dataset=[LazyCall(SyntheticLMDataset)(num_samples=256, seq_length=16, vocab_size=128)],
        num_workers=0)
    cfg.optim.lr = 1e-3
    # One parameter group: clipping then means the same in Eager and Graph mode.
    wd = cfg.optim.weight_decay
    cfg.optim.params.weight_decay = cfg.optim.params.weight_decay_norm = cfg.optim.params.weight_decay_bias = wd
    cfg.train.update(dict(
        output_dir=os.path.join(out_dir, "graph" if graph else "eager"),
        train_micro_batch_size=GLOBAL_BATCH // (dp * acc), num_accumulation_steps=acc, train_iter=ITERS,
        log_period=100, warmup_ratio=0.0, evaluation=dict(enabled=False),
        checkpointer=dict(period=10000),
        dist=dict(data_parallel_size=dp, tensor_parallel_size=tp,
                  pipeline_parallel_size=pp, pipeline_num_layers=LAYERS, device_type="cpu"),
    ))
    return cfg


def build_sft_cfg(out_dir, graph, dp=1, tp=1, pp=1, acc=1):
    """configs/mistral_sft.py loaded as ``tools/train_net.py --config-file configs/mistral_sft.py
    --smoke`` does (2 layers, width 32, stand-in chat data whose prompts are masked; ZeRO-2,
    which needs Graph mode, only there) at the layout, with the 24 stand-in chats whole, two to
    a 144-token row (12 rows; --smoke's 32 tokens would hold one truncated sample per row) and
    a sliding window of 8, so that the window and packing's block-diagonal mask both apply.
    One micro-batch per step in every layout: averaging micro-batch losses is not the one-batch
    mean over response tokens, whose count differs between micro-batches."""
    del acc
    opts = [f"train.output_dir='{out_dir}'", f"graph.enabled={graph}", f"train.zero_optimization.enabled={graph}",
            "model.cfg.sliding_window=8", f"model.cfg.max_position_embeddings={SFT_PACKED}",
            f"dataloader.train.dataset.0.dataset.max_seq_length={SFT_SAMPLE}",
            f"+dataloader.train.dataset.0.max_seq_length={SFT_PACKED}",
            f"train.train_iter={SFT_ITERS}", f"train.train_micro_batch_size={SFT_BATCH // dp}",
            "train.num_accumulation_steps=1", "train.evaluation.enabled=False", "train.warmup_ratio=0.0",
            # updates large enough to show a wrong gradient shard, and one parameter group (the
            # same clipping in Eager and Graph mode, as in build_cfg)
            "optim.lr=0.01", "+optim.params.weight_decay=0.0", "optim.params.weight_decay_norm=0.0",
            "optim.params.weight_decay_bias=0.0",
            f"train.dist.data_parallel_size={dp}", f"train.dist.tensor_parallel_size={tp}",
            f"train.dist.pipeline_parallel_size={pp}", "train.dist.device_type=cpu"]
    return load_config(default_argument_parser().parse_args(["--config-file", SFT_RECIPE, "--smoke", *opts]))


def train_layout(name, out_dir, modes, build=build_cfg):
    """``({mode: losses}, ["<name>/<mode>=<runner>", ...])`` of one layout."""
    sizes = dict(LAYOUTS[name])
    stop_after = sizes.pop("stop_after", None)
    result, runners = {}, []
    for mode in modes:
        losses = []
        trainer = LossOnlyTrainer(build(os.path.join(out_dir, name), mode == "graph", **sizes))
        trainer.register_hooks([Record(losses, stop_after)], after="LRScheduler")
        trainer.train()
        result[mode] = losses
        runners.append(f"{name}/{mode}={runner_description(trainer)}")
        # A compiled graph over several ranks closes its runtime together with the other ranks:
        # free it here, at the same point on every rank, not whenever the collector gets to it
        # (one rank closing while another already runs the next layout's collectives hangs).
        del trainer
        gc.collect()
    return result, runners


def main():
    p = argparse.ArgumentParser()
    p.add_argument("layouts", nargs="+", choices=sorted(LAYOUTS))
    p.add_argument("--modes", default="eager,graph")
    p.add_argument("--sft-modes", default="", help="also train configs/mistral_sft.py in these modes")
    p.add_argument("--out-dir", required=True)
    args = p.parse_args()
    result, runners = {}, []
    for name in args.layouts:
        result[name], ran = train_layout(name, args.out_dir, args.modes.split(","))
        runners += ran
        if args.sft_modes:
            result[f"sft/{name}"], ran = train_layout(name, os.path.join(args.out_dir, "sft"),
                                                      args.sft_modes.split(","), build_sft_cfg)
            runners += [f"sft/{item}" for item in ran]
    # every rank reports what ran its steps and the losses it saw (the test requires all ranks)
    # in one write: the "Stopping training" warning of a stop on another rank cannot split it
    write_record(f"RESULT rank={dist.get_rank()} {' '.join(runners)} "
                 f"losses={json.dumps(result, separators=(',', ':'))}")
    if dist.is_main_process():
        with open(os.path.join(args.out_dir, "losses.json"), "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        if dist.get_world_size() > 1:
            from libai.engine.default import exit_now_on_failure

            exit_now_on_failure()
        raise
