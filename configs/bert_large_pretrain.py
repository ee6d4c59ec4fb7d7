"""BERT-large pretraining (masked LM + sentence order) on a preprocessed sentence corpus.

    python tools/train_net.py --config-file configs/bert_large_pretrain.py
    python -m oneflow.distributed.launch --nproc_per_node 4 tools/train_net.py \\
        --config-file configs/bert_large_pretrain.py train.dist.tensor_parallel_size=2 \\
        train.dist.pipeline_parallel_size=2

BERT-large: 24 layers of width 1024 with 16 heads and a 4096-wide MLP, 512 positions.
"""
from libai.config import LazyCall
from libai.evaluation import PPLEvaluator

from .common.data.bert_dataset import dataloader, tokenization
from .common.models.bert import bert_large
from .common.models.graph import graph
from .common.optim import optim
from .common.train import train

model = bert_large()

# Placeholders: make the vocabulary and corpus as in docs/prepare_text_data.md.
# The trainer builds this tokenizer and hands it to every dataset (LiBai's behaviour).
tokenization.tokenizer.vocab_file = "./data_test/bert_data/bert-base-chinese-vocab.txt"
dataloader.train.dataset[0].data_prefix = "./data_test/bert_data/loss_compara_content_sentence"
dataloader.test[0].dataset.data_prefix = "./data_test/bert_data/loss_compara_content_sentence"
# bert-base-chinese's 21128 tokens; the trainer sets vocab_size to the tokenizer's padded size.
model.cfg.vocab_size = 21128

for _dataset in [dataloader.train.dataset[0], dataloader.test[0].dataset]:
    _dataset.max_seq_length = model.cfg.max_position_embeddings

train.update(
    dict(
        output_dir="./output/bert_large_pretrain",
        train_micro_batch_size=16,
        test_micro_batch_size=16,
        train_iter=1000000,
        warmup_ratio=0.01,
        log_period=100,
    )
)
train.evaluation.enabled = True
train.evaluation.evaluator = LazyCall(PPLEvaluator)()
train.evaluation.eval_period = 10000
train.evaluation.eval_iter = 100
train.evaluation.eval_metric = "PPL"
train.evaluation.eval_mode = "min"
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
train.dist.pipeline_num_layers = model.cfg.hidden_layers
optim.lr = 1e-4
