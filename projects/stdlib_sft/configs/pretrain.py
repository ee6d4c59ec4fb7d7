"""Stage 1: the base model, pretrained on every docstring (``module.name: docstring``).

Docstrings are packed into sequences of 128 tokens (each attends only to itself); 400
iterations of 16 sequences, AdamW at 3e-3 with a cosine schedule.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_nlp_train_loader
from libai.data.datasets import PackedDataset

from configs.common.models.graph import graph  # noqa: F401
from configs.common.optim import optim
from configs.common.train import train

from ..text_dataset import TextDataset
from .common import DATA, SEQ, model, tokenization  # noqa: F401

dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_nlp_train_loader)(
    dataset=[LazyCall(PackedDataset)(dataset=LazyCall(TextDataset)(
        source=f"{DATA}/docstrings.jsonl", tokenizer=tokenization.tokenizer, max_seq_length=SEQ))],
    num_workers=0,
)
dataloader.test = []

optim.lr = 3e-3
optim.weight_decay = 0.01

train.update(dict(
    output_dir="output/stdlib_sft/base", train_micro_batch_size=16, train_iter=400,
    warmup_ratio=0.05, log_period=50, seed=0,
))
train.evaluation.enabled = False
train.checkpointer.period = 400
train.dist.pipeline_num_layers = model.cfg.hidden_layers
