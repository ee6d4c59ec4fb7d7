"""BERT-base sentence classification (fine-tuning), e.g. two-class sentiment.

    python tools/train_net.py --config-file configs/bert_classification.py \\
        train.load_weight=/path/to/pretrained/bert

Start from pretrained weights with ``train.load_weight`` (a libai checkpoint, or a Hugging Face
BERT folder); projects/text_classification is a complete, small worked example.
"""
from libai.config import LazyCall
from libai.evaluation import ClsEvaluator
from libai.models import BertForClassification

from .common.data.text_classification import dataloader, tokenization
from .common.models.bert import bert_cfg
from .common.models.graph import graph
from .common.optim import optim
from .common.train import train

# BERT-base's encoder settings (without the pretraining-only sentence-order head).
_encoder = {k: v for k, v in bert_cfg("base").items() if k != "add_binary_head"}
model = LazyCall(BertForClassification)(
    cfg=dict(_encoder, num_labels=2, classifier_dropout=0.1,
             vocab_size=21128)  # bert-base-chinese's vocabulary; set your vocabulary's size
)

# Placeholders: the vocabulary and JSON-lines files described in docs/prepare_text_data.md.
# The trainer builds this tokenizer and hands it to every dataset (LiBai's behaviour).
tokenization.tokenizer.vocab_file = "./data_test/bert_data/bert-base-chinese-vocab.txt"
dataloader.train.dataset[0].data_file = "./data/text_classification/train.jsonl"
dataloader.test[0].dataset.data_file = "./data/text_classification/dev.jsonl"

optim.lr = 2e-5

train.update(
    dict(
        output_dir="./output/bert_classification",
        train_micro_batch_size=32,
        test_micro_batch_size=64,
        train_iter=0,
        train_epoch=3,
        warmup_ratio=0.1,
        log_period=20,
    )
)
train.evaluation.enabled = True
train.evaluation.evaluator = LazyCall(ClsEvaluator)(topk=(1,))
train.evaluation.eval_period = 500
train.evaluation.eval_metric = "Acc@1"
train.evaluation.eval_mode = "max"
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
train.activation_checkpoint.enabled = True
train.dist.pipeline_num_layers = model.cfg.hidden_layers
