"""T5-large pretraining: span corruption (sentinel-marked spans) over a preprocessed corpus.

    python tools/train_net.py --config-file configs/t5_large_pretrain.py
    python -m oneflow.distributed.launch --nproc_per_node 4 tools/train_net.py \\
        --config-file configs/t5_large_pretrain.py train.dist.tensor_parallel_size=2 \\
        train.dist.pipeline_parallel_size=2

T5-large: 24 encoder and 24 decoder layers of width 1024, 16 heads, a 4096-wide MLP.
"""
from .common.data.t5_dataset import dataloader, tokenization
from .common.lm_pretrain import train
from .common.models.graph import graph
from .common.models.t5 import t5_large
from .common.optim import optim

model = t5_large()  # LiBai's T5 at Google's T5-large size
# bert-base-chinese's 21128 tokens + 100 sentinels + [BOS]/[EOS], padded to a multiple of 128
model.cfg.vocab_size = 21248

# Placeholders: make the vocabulary and corpus as in docs/prepare_text_data.md.
# The trainer builds this tokenizer and hands it to every dataset (LiBai's behaviour).
tokenization.tokenizer.vocab_file = "./data_test/bert_data/bert-base-chinese-vocab.txt"
dataloader.train.dataset[0].data_prefix = "./data_test/bert_data/loss_compara_content_sentence"
dataloader.test[0].dataset.data_prefix = "./data_test/bert_data/loss_compara_content_sentence"

train.output_dir = "./output/t5_large_pretrain"
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
train.dist.pipeline_num_layers = model.cfg.hidden_layers + model.cfg.decoder_layers
