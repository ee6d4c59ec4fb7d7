"""T5-large pretraining: span corruption (sentinel-marked spans) over a preprocessed corpus.

    python tools/train_net.py --config-file configs/t5_large_pretrain.py
    python -m oneflow.distributed.launch --nproc_per_node 4 tools/train_net.py \\
        --config-file configs/t5_large_pretrain.py train.dist.tensor_parallel_size=2 \\
        train.dist.pipeline_parallel_size=2

T5-large: 24 encoder and 24 decoder layers of width 1024, 16 heads, a 4096-wide MLP.
"""
from libai.config import LazyCall
from libai.evaluation import PPLEvaluator

from .common.data.t5_dataset import dataloader, tokenization
from .common.models.graph import graph
from .common.models.t5 import t5_large
from .common.optim import optim
from .common.train import train

model = t5_large()  # LiBai's T5 at Google's T5-large size
# bert-base-chinese's 21128 tokens + 100 sentinels + [BOS]/[EOS], padded to a multiple of 128
model.cfg.vocab_size = 21248

# Placeholders: make the vocabulary and corpus as in docs/prepare_text_data.md.
# The trainer builds this tokenizer and hands it to every dataset (LiBai's behaviour).
tokenization.tokenizer.vocab_file = "./data_test/bert_data/bert-base-chinese-vocab.txt"
dataloader.train.dataset[0].data_prefix = "./data_test/bert_data/loss_compara_content_sentence"
dataloader.test[0].dataset.data_prefix = "./data_test/bert_data/loss_compara_content_sentence"

train.update(
    dict(
        output_dir="./output/t5_large_pretrain",
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
train.dist.pipeline_num_layers = model.cfg.hidden_layers + model.cfg.decoder_layers
