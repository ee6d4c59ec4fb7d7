"""GPT-2 tiny pretrained on the Python documentation's help topics (a real English corpus that
ships with Python; see the project's README for the three commands that make the data).

Model: 4 blocks, width 128, 4 heads, context 64, vocabulary 2048 (a byte-level BPE learned on
the corpus). 300 iterations of 16 sequences; validation perplexity on the held-out documents
(the ``valid`` part of a 90/5/5 document split) every 100 iterations.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall, get_config
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader
from libai.data.datasets import GPT2Dataset
from libai.models import GPTForPreTraining
from libai.tokenizer import GPT2Tokenizer

from configs.common.train import ppl_evaluation

train = get_config("common/train.py").train
optim = get_config("common/optim.py").optim
graph = get_config("common/models/graph.py").graph

DATA = "data/pydoc"
SEQ, LAYERS = 64, 4
SPLITS = "90,5,5"

tokenization = OmegaConf.create()
tokenization.tokenizer = LazyCall(GPT2Tokenizer)(
    vocab_file=f"{DATA}/vocab/vocab.json", merges_file=f"{DATA}/vocab/merges.txt"
)
tokenization.append_eod = True
tokenization.make_vocab_size_divisible_by = 128

model = LazyCall(GPTForPreTraining)(
    cfg=dict(
        vocab_size=2048,
        hidden_size=128,
        hidden_layers=LAYERS,
        num_attention_heads=4,
        intermediate_size=512,
        max_seq_length=SEQ,
        embedding_dropout_prob=0.1,
        attention_dropout_prob=0.1,
        hidden_dropout_prob=0.1,
    )
)


def corpus_in(data: str, name: str, split: str) -> object:
    """The ``split`` part (90/5/5 by document) of ``{data}/{name}_text_document``, in
    ``SEQ``-token samples (projects/llama_lora builds on this config with its own folder)."""
    return LazyCall(GPT2Dataset)(
        name=name, data_prefix=f"{data}/{name}_text_document", max_seq_length=SEQ,
        seed=1234, split=split, splits_string=SPLITS,
    )


dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_nlp_train_loader)(
    dataset=[corpus_in(DATA, "pydoc", "train")], num_workers=0
)
dataloader.test = [
    LazyCall(build_nlp_test_loader)(dataset=corpus_in(DATA, "pydoc", "valid"), num_workers=0)
]

optim.lr = 2e-3
optim.weight_decay = 0.01

train.update(
    dict(
        output_dir="output/gpt2_tiny_pydoc",
        train_micro_batch_size=16,
        test_micro_batch_size=32,
        train_iter=300,
        warmup_ratio=0.05,
        log_period=20,
        checkpointer=dict(period=100, max_to_keep=2),
        evaluation=ppl_evaluation(100),
    )
)
train.dist.pipeline_num_layers = LAYERS
