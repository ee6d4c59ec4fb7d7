"""RoBERTa pretraining (masked LM, no sentence-pair task) on a preprocessed sentence corpus.

    python tools/train_net.py --config-file configs/roberta_pretrain.py
    python -m oneflow.distributed.launch --nproc_per_node 4 tools/train_net.py \\
        --config-file configs/roberta_pretrain.py train.dist.tensor_parallel_size=2 \\
        train.dist.pipeline_parallel_size=2

RoBERTa-base: 12 layers of width 768 with 12 heads, 514 positions (512 tokens).
"""
from .common.data.roberta_dataset import dataloader, tokenization
from .common.lm_pretrain import train
from .common.models.graph import graph
from .common.models.roberta import roberta_base
from .common.optim import optim

model = roberta_base()

# Placeholders: make the vocabulary, merges and corpus as in docs/prepare_text_data.md.
tokenization.tokenizer.vocab_file = "./data_test/roberta_data/roberta-vocab.json"
tokenization.tokenizer.merges_file = "./data_test/roberta_data/roberta-merges.txt"
for _dataset in [dataloader.train.dataset[0], dataloader.test[0].dataset]:
    _dataset.tokenizer = tokenization.tokenizer
    _dataset.data_prefix = "./data_test/roberta_data/loss_compara_content_sentence"
    # positions start after the padding id: 514 learned positions hold 512 tokens
    _dataset.max_seq_length = model.cfg.max_position_embeddings - model.cfg.pad_token_id - 1

train.update(
    dict(
        output_dir="./output/roberta_pretrain",
        train_iter=500000,
    )
)
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
train.dist.pipeline_num_layers = model.cfg.hidden_layers
optim.lr = 6e-4
