"""BERT-large pretraining (masked LM + sentence order) on a preprocessed sentence corpus.

    python tools/train_net.py --config-file configs/bert_large_pretrain.py
    python -m oneflow.distributed.launch --nproc_per_node 4 tools/train_net.py \\
        --config-file configs/bert_large_pretrain.py train.dist.tensor_parallel_size=2 \\
        train.dist.pipeline_parallel_size=2

BERT-large: 24 layers of width 1024 with 16 heads and a 4096-wide MLP, 512 positions.
"""
from .common.data.bert_dataset import dataloader, tokenization
from .common.lm_pretrain import train
from .common.models.bert import bert_large
from .common.models.graph import graph
from .common.optim import optim

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

train.output_dir = "./output/bert_large_pretrain"
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
train.dist.pipeline_num_layers = model.cfg.hidden_layers
optim.lr = 1e-4
