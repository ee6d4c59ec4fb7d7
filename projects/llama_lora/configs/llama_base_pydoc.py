"""Step 1: a tiny Llama pretrained on the Python documentation's help topics (the base model).

Model: the ``tiny`` preset of configs/common/models/llama.py (4 blocks of width 128, 4 query
heads sharing 2 key/value heads, SwiGLU 352, RMSNorm, rotary positions, untied head),
context 64, vocabulary 2048 (a byte-level BPE learned on the corpus). 300 iterations of 16
sequences; validation perplexity on held-out help topics every 100 iterations.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall, get_config
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader
from libai.data.datasets import GPT2Dataset
from libai.evaluation import PPLEvaluator
from libai.models import LlamaForCausalLM
from libai.tokenizer import GPT2Tokenizer

from configs.common.models.llama import llama_cfg

train = get_config("common/train.py").train
optim = get_config("common/optim.py").optim
graph = get_config("common/models/graph.py").graph


DATA = "data/llama_lora"
SEQ = 64
SPLITS = "90,5,5"

tokenization = OmegaConf.create()
tokenization.tokenizer = LazyCall(GPT2Tokenizer)(
    vocab_file=f"{DATA}/vocab/vocab.json", merges_file=f"{DATA}/vocab/merges.txt"
)
tokenization.append_eod = True
tokenization.make_vocab_size_divisible_by = 128

model = LazyCall(LlamaForCausalLM)(cfg=dict(llama_cfg("tiny"), max_position_embeddings=SEQ))


def corpus(name: str, split: str) -> object:
    """The ``split`` part (90/5/5 by document) of ``{DATA}/{name}_text_document``."""
    return LazyCall(GPT2Dataset)(
        name=name, data_prefix=f"{DATA}/{name}_text_document", max_seq_length=SEQ,
        seed=1234, split=split, splits_string=SPLITS,
    )


dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_nlp_train_loader)(dataset=[corpus("pydoc", "train")], num_workers=0)
dataloader.test = [LazyCall(build_nlp_test_loader)(dataset=corpus("pydoc", "valid"), num_workers=0)]

optim.lr = 2e-3
optim.weight_decay = 0.01

train.update(
    dict(
        output_dir="output/llama_lora/base",
        train_micro_batch_size=16,
        test_micro_batch_size=32,
        train_iter=300,
        warmup_ratio=0.05,
        log_period=20,
        checkpointer=dict(period=100, max_to_keep=2),
        evaluation=dict(
            enabled=True,
            evaluator=LazyCall(PPLEvaluator)(),
            eval_period=100,
            eval_metric="PPL",
            eval_mode="min",
        ),
    )
)
train.dist.pipeline_num_layers = model.cfg.hidden_layers
