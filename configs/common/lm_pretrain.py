"""The training block of the language-model pretraining recipes:
``from .common.lm_pretrain import train`` (instead of ``.common.train``).

``configs/common/train.py``'s defaults plus what the BERT, RoBERTa, GPT-2 and T5 pretraining
recipes share: micro-batches of 16 for training and evaluation, 1,000,000 iterations with 1 %
warm-up, a log line every 100 iterations, and perplexity (lower is better) measured on 100
batches every 10,000 iterations. A recipe sets its ``output_dir`` and overrides what differs.
"""
from .train import ppl_evaluation, train

train.update(
    dict(
        train_micro_batch_size=16,
        test_micro_batch_size=16,
        train_iter=1000000,
        warmup_ratio=0.01,
        log_period=100,
    )
)
train.evaluation.update(ppl_evaluation(10000), eval_iter=100)
