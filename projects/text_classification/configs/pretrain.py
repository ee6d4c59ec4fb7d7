"""Step 1: pretrain the small BERT (masked LM) on the lexicon's glosses.

    python tools/train_net.py --config-file projects/text_classification/configs/pretrain.py
"""
from libai.config import LazyCall
from libai.models import BertForPreTraining

from configs.common.data.bert_dataset import dataloader, tokenization
from configs.common.models.graph import graph
from configs.common.optim import optim
from configs.common.train import ppl_evaluation, train

from .bert_tiny import DATA, MAX_LEN, encoder_cfg, share_run_settings

model = LazyCall(BertForPreTraining)(cfg=dict(encoder_cfg, add_binary_head=False))

for _dataset in (dataloader.train.dataset[0], dataloader.test[0].dataset):
    _dataset.update(data_prefix=f"{DATA}/corpus_text_sentence", max_seq_length=MAX_LEN,
                    binary_head=False, splits_string="95,5,0")

optim.lr = 1e-3

share_run_settings(tokenization, dataloader, train, "pretrain", train_micro_batch_size=32,
                   test_micro_batch_size=32, train_iter=400, warmup_ratio=0.05)
train.evaluation.update(ppl_evaluation(200))
