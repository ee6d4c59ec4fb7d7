"""Step 1: a tiny Llama pretrained on the Python documentation's help topics (the base model).

Model: the ``tiny`` preset of configs/common/models/llama.py (4 blocks of width 128, 4 query
heads sharing 2 key/value heads, SwiGLU 352, RMSNorm, rotary positions, untied head),
context 64, vocabulary 2048 (a byte-level BPE learned on the corpus). Data, tokenizer,
optimizer and schedule are projects/gpt2_tiny_pretrain's (built on its config, with this
project's data folder): 300 iterations of 16 sequences; validation perplexity on held-out help
topics every 100 iterations.
"""
from libai.config import LazyCall
from libai.models import LlamaForCausalLM

from configs.common.models.llama import llama_cfg

from ...gpt2_tiny_pretrain.configs.gpt2_tiny_pydoc import (  # noqa: F401
    SEQ, corpus_in, dataloader, graph, optim, tokenization, train,
)

DATA = "data/llama_lora"

tokenization.tokenizer.update(
    vocab_file=f"{DATA}/vocab/vocab.json", merges_file=f"{DATA}/vocab/merges.txt"
)

model = LazyCall(LlamaForCausalLM)(cfg=dict(llama_cfg("tiny"), max_position_embeddings=SEQ))


def corpus(name: str, split: str) -> object:
    """The ``split`` part (90/5/5 by document) of ``{DATA}/{name}_text_document``."""
    return corpus_in(DATA, name, split)


dataloader.train.dataset = [corpus("pydoc", "train")]
dataloader.test[0].dataset = corpus("pydoc", "valid")

train.output_dir = "output/llama_lora/base"
train.dist.pipeline_num_layers = model.cfg.hidden_layers
