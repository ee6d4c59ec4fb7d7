"""Step 2: fine-tune the pretrained BERT to tell positive from negative word senses.

    python tools/train_net.py --config-file projects/text_classification/configs/finetune.py \\
        train.load_weight=output/text_classification/pretrain/model_final

``train.load_weight`` loads the encoder (``bert.*``) from the pretraining checkpoint; the
classifier is new (the log lists it as missing) and the masked-LM head is left out.
"""
from libai.config import LazyCall
from libai.evaluation import ClsEvaluator
from libai.models import BertForClassification

from configs.common.data.text_classification import dataloader, tokenization
from configs.common.models.graph import graph
from configs.common.optim import optim
from configs.common.train import train

from .bert_tiny import DATA, MAX_LEN, encoder_cfg, share_run_settings

model = LazyCall(BertForClassification)(cfg=dict(encoder_cfg, num_labels=2, classifier_dropout=0.1))

dataloader.train.dataset[0].update(data_file=f"{DATA}/train.jsonl", max_seq_length=MAX_LEN)
dataloader.test[0].dataset.update(data_file=f"{DATA}/dev.jsonl", max_seq_length=MAX_LEN)

optim.lr = 2e-4

share_run_settings(tokenization, dataloader, train, "finetune", train_micro_batch_size=32,
                   test_micro_batch_size=64, train_iter=0, train_epoch=6, warmup_ratio=0.1)
train.evaluation.evaluator = LazyCall(ClsEvaluator)(topk=(1,))
train.evaluation.eval_period = 42  # about once per epoch
