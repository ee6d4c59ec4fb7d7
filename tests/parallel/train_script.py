"""Train a tiny GPT for a few iterations under the layout given on the command line and
write the per-iteration losses (rank 0) to a JSON file; every rank also prints a record
``RESULT rank=<r> eager=<runner> graph=<runner> losses=<json>`` naming what ran its steps. Run directly for one process or
under ``oneflow.distributed.launch`` for several; the test compares the files."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import libai  # noqa: E402,F401
from omegaconf import OmegaConf  # noqa: E402

from libai.config import LazyCall, get_config  # noqa: E402
from libai.data.build import build_nlp_train_loader  # noqa: E402
from libai.data.datasets.synthetic import SyntheticLMDataset  # noqa: E402
from libai.engine import DefaultTrainer  # noqa: E402
from libai.engine.trainer import HookBase  # noqa: E402
from libai.models import GPTForPreTraining  # noqa: E402
from libai.utils import distributed as dist  # noqa: E402
from libai.utils.testing import runner_description, write_record  # noqa: E402

LAYERS = 4


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
            self.trainer.request_stop(f"--stop-after {self.stop_after}", save_checkpoint=False)


def build_cfg(args, graph):
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
    micro = args.global_batch // (args.dp * args.acc)
    cfg.train.update(dict(
        output_dir=os.path.join(args.out_dir, "graph" if graph else "eager"),
        train_micro_batch_size=micro, num_accumulation_steps=args.acc, train_iter=args.iters,
        log_period=100, warmup_ratio=0.0, evaluation=dict(enabled=False),
        checkpointer=dict(period=10000),
        dist=dict(data_parallel_size=args.dp, tensor_parallel_size=args.tp,
                  pipeline_parallel_size=args.pp, pipeline_num_layers=LAYERS, device_type="cpu"),
    ))
    return cfg


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dp", type=int, default=1)
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--pp", type=int, default=1)
    p.add_argument("--acc", type=int, default=1)
    p.add_argument("--global-batch", type=int, default=8)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--stop-after", type=int, default=None, help="end after this many iterations")
    p.add_argument("--modes", default="eager,graph")
    p.add_argument("--out-dir", required=True)
    args = p.parse_args()
    result, runners = {}, []
    for mode in args.modes.split(","):
        losses = []
        trainer = DefaultTrainer(build_cfg(args, graph=(mode == "graph")))
        trainer.register_hooks([Record(losses, args.stop_after)], after="LRScheduler")
        trainer.train()
        result[mode] = losses
        runners.append(f"{mode}={runner_description(trainer)}")
    # every rank reports what ran its steps and the losses it saw (the test requires all ranks)
    # in one write: the "Stopping training" warning of --stop-after on another rank cannot split it
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
