"""GPT-3 175B pretraining, laid out as Megatron-LM trained it on 1,024 A100s.

Shape from Brown et al. 2020 (96 layers, width 12288, 96 heads, 2048 tokens); layout and batch
from Narayanan et al. 2021, Table 1 (tensor parallel 8 inside a node, pipeline parallel 8,
data parallel 16; global batch 1536), with AMP and activation checkpointing. Plan it before
launching (docs/preflight.md)::

    python tools/train_net.py --config-file configs/gpt3_175b_pretrain.py --dry-run \\
        --nodes 128 --devices-per-node 8 --device-memory 80GiB

and launch on 128 nodes of 8 GPUs with ``python -m libai.launch --nnodes 128 --nproc_per_node 8
... tools/train_net.py --config-file configs/gpt3_175b_pretrain.py``. The vocabulary is
GPT-2's 50257 tokens padded to 51200 (a multiple of 128 × 8 tensor-parallel ranks).
"""
from .common.models.gpt import gpt2_cfg
from .gpt2_pretrain import dataloader, graph, model, optim, tokenization, train

model.cfg = dict(
    gpt2_cfg("small"),
    vocab_size=51200,
    hidden_size=12288,
    hidden_layers=96,
    num_attention_heads=96,
    intermediate_size=4 * 12288,
    max_seq_length=2048,
    amp_enabled=True,
)
tokenization.make_vocab_size_divisible_by = 128
for _dataset in [dataloader.train.dataset[0], dataloader.test[0].dataset]:
    _dataset.max_seq_length = 2048

optim.lr = 0.6e-4
graph.enabled = True

train.update(
    dict(
        output_dir="./output/gpt3_175b_pretrain",
        train_micro_batch_size=1,
        global_batch_size=1536,
        num_accumulation_steps=None,
        test_micro_batch_size=1,
        train_iter=100000,
    )
)
train.amp.enabled = True
train.activation_checkpoint.enabled = True
train.dist.tensor_parallel_size = 8
train.dist.pipeline_parallel_size = 8
train.dist.pipeline_num_layers = 96
