"""A tiny GPT on synthetic token sequences: a complete config for trying out layouts.

Nothing to download or prepare: ``SyntheticLMDataset`` makes deterministic sequences whose
pattern the model learns within a few dozen steps, so the loss falls visibly. It trains in
well under a minute on a CPU, in one process or several:

    python tools/train_net.py --config-file configs/examples/gpt_tiny_synthetic.py
    python -m oneflow.distributed.launch --nproc_per_node 2 tools/train_net.py \\
        --config-file configs/examples/gpt_tiny_synthetic.py train.dist.tensor_parallel_size=2

``train.dist.pipeline_num_layers`` already equals the number of transformer blocks, so
``train.dist.pipeline_parallel_size=2`` works as an override too. See docs/distributed.md.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall, get_config
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader
from libai.data.datasets.synthetic import SyntheticLMDataset
from libai.models import GPTForPreTraining

from configs.common.train import ppl_evaluation

train = get_config("common/train.py").train
optim = get_config("common/optim.py").optim
graph = get_config("common/models/graph.py").graph

VOCAB, SEQ, LAYERS = 128, 32, 4

model = LazyCall(GPTForPreTraining)(
    cfg=dict(
        vocab_size=VOCAB,  # divisible by tensor_parallel_size (the vocabulary is split)
        hidden_size=64,
        hidden_layers=LAYERS,
        num_attention_heads=4,  # divisible by tensor_parallel_size (heads are split)
        intermediate_size=256,
        max_seq_length=SEQ,
        embedding_dropout_prob=0.0,
        attention_dropout_prob=0.0,
        hidden_dropout_prob=0.0,
    )
)

dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_nlp_train_loader)(
    dataset=[LazyCall(SyntheticLMDataset)(num_samples=2048, seq_length=SEQ, vocab_size=VOCAB, seed=0)],
    num_workers=0,
)
dataloader.test = [
    LazyCall(build_nlp_test_loader)(
        # Another seed: sequences the model has not trained on, with the same pattern.
        dataset=LazyCall(SyntheticLMDataset)(num_samples=64, seq_length=SEQ, vocab_size=VOCAB, seed=1),
        num_workers=0,
    )
]

optim.lr = 1e-3

train.update(
    dict(
        output_dir="output/gpt_tiny_synthetic",
        train_micro_batch_size=8,
        test_micro_batch_size=16,
        train_iter=60,
        warmup_ratio=0.1,
        log_period=10,
        checkpointer=dict(period=30, max_to_keep=2),
        evaluation=ppl_evaluation(30),
    )
)
# Set one key, keeping the other dist defaults (so train.dist.* overrides find them).
train.dist.pipeline_num_layers = LAYERS  # the blocks to spread over pipeline stages
