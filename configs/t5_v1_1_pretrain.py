"""T5 v1.1-base pretraining: span corruption over a preprocessed corpus, with Google's T5 v1.1
architecture (relative position bias, RMS norm, gated-GELU MLP, no biases, untied head).

    python tools/train_net.py --config-file configs/t5_v1_1_pretrain.py
    python -m oneflow.distributed.launch --nproc_per_node 2 tools/train_net.py \\
        --config-file configs/t5_v1_1_pretrain.py train.dist.tensor_parallel_size=2

The data pipeline is LiBai's T5 one (a WordPiece vocabulary with 100 sentinels, as in
``t5_large_pretrain.py``); the trainer sets ``model.cfg.vocab_size`` to the tokenizer's padded
size. To continue from released weights instead, ``train.load_weight=/path/to/hf/t5-v1_1-base``
(a Hugging Face directory; the vocabulary must then be that checkpoint's SentencePiece one).
"""
from .common.data.t5_dataset import dataloader, tokenization
from .common.lm_pretrain import train
from .common.models.graph import graph
from .common.models.t5 import t5_v1_1_base
from .common.optim import optim

model = t5_v1_1_base()

# Placeholders: make the vocabulary and corpus as in docs/prepare_text_data.md.
tokenization.tokenizer.vocab_file = "./data_test/bert_data/bert-base-chinese-vocab.txt"
dataloader.train.dataset[0].data_prefix = "./data_test/bert_data/loss_compara_content_sentence"
dataloader.test[0].dataset.data_prefix = "./data_test/bert_data/loss_compara_content_sentence"

optim.lr = 1e-3  # T5 v1.1 is usually trained with Adafactor at 1e-2; AdamW wants less

train.output_dir = "./output/t5_v1_1_pretrain"
train.dist.pipeline_num_layers = model.cfg.hidden_layers + model.cfg.decoder_layers
