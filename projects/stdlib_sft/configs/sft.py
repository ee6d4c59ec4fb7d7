"""Stage 2: supervised fine-tuning of the base model on the training functions' questions.

Chat samples (``What does module.name do?`` -> the docstring's first sentence) rendered by the
tokenizer's chat template, loss on the assistant turn only, packed into 128-token sequences;
the response-only loss of the held-out functions (unseen in fine-tuning) is evaluated every
100 iterations. 200 iterations of 16 sequences, AdamW at 1e-3.

Before fine-tuning, the same evaluation of the base model::

    python tools/train_net.py --config-file projects/stdlib_sft/configs/sft.py --eval-only \\
        train.load_weight=output/stdlib_sft/base/model_final
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader
from libai.data.datasets import ChatDataset, PackedDataset
from libai.evaluation import ResponseLossEvaluator

from configs.common.models.graph import graph  # noqa: F401
from configs.common.optim import optim
from configs.common.train import train

from .common import DATA, SEQ, model, tokenization  # noqa: F401


def chats(split: str):
    return LazyCall(ChatDataset)(source=f"{DATA}/{split}.jsonl", tokenizer=tokenization.tokenizer,
                                 max_seq_length=SEQ)


dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_nlp_train_loader)(
    dataset=[LazyCall(PackedDataset)(dataset=chats("train"))], num_workers=0)
dataloader.test = [LazyCall(build_nlp_test_loader)(dataset=chats("valid"), num_workers=0)]

optim.lr = 1e-3
optim.weight_decay = 0.0

train.update(dict(
    output_dir="output/stdlib_sft/sft", load_weight="output/stdlib_sft/base/model_final",
    train_micro_batch_size=16, test_micro_batch_size=32, train_iter=200, warmup_ratio=0.05,
    log_period=50, seed=0,
))
train.evaluation.update(dict(enabled=True, evaluator=LazyCall(ResponseLossEvaluator)(),
                             eval_period=100, eval_metric="response_loss", eval_mode="min"))
train.checkpointer.period = 200
train.dist.pipeline_num_layers = model.cfg.hidden_layers
