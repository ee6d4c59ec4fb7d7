"""GPT-2 (small) pretraining: next-token prediction over a preprocessed corpus.

    python tools/train_net.py --config-file configs/gpt2_pretrain.py
    python -m oneflow.distributed.launch --nproc_per_node 2 tools/train_net.py \\
        --config-file configs/gpt2_pretrain.py train.dist.tensor_parallel_size=2

GPT-2 small: 12 layers of width 768 with 12 heads, 1024 positions (124M parameters); the other
sizes are ``gpt2_medium``/``gpt2_large``/``gpt2_xl`` in configs/common/models/gpt.py.
"""
from .common.data.gpt_dataset import dataloader, tokenization
from .common.lm_pretrain import train
from .common.models.gpt import gpt2_small
from .common.models.graph import graph
from .common.optim import optim

model = gpt2_small()

# Placeholders: make the vocabulary, merges and corpus as in docs/prepare_text_data.md.
tokenization.tokenizer.vocab_file = "./data_test/gpt_data/gpt2-vocab.json"
tokenization.tokenizer.merges_file = "./data_test/gpt_data/gpt2-merges.txt"
dataloader.train.dataset[0].data_prefix = "./data_test/gpt_data/loss_compara_content_sentence"
dataloader.test[0].dataset.data_prefix = "./data_test/gpt_data/loss_compara_content_sentence"

for _dataset in [dataloader.train.dataset[0], dataloader.test[0].dataset]:
    _dataset.max_seq_length = model.cfg.max_seq_length

optim.lr = 1.5e-4

train.update(
    dict(
        output_dir="./output/gpt2_pretrain",
        train_micro_batch_size=4,
        test_micro_batch_size=4,
        train_iter=500000,
    )
)
train.evaluation.eval_period = 5000
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
train.dist.pipeline_num_layers = model.cfg.hidden_layers
