"""Step 2: LoRA fine-tuning of the base model on standard-library docstrings.

The base model of step 1 (``output/llama_lora/base/model_final``) is loaded, rank-8 adapters
(alpha 16) are added to every attention projection (``query`` and ``key_value``) and
everything else is frozen: 16,384 trainable parameters of 1,279,104 (1.3 %). 300 iterations
of 16 sequences of 64 tokens; validation perplexity on held-out docstrings every 100.
"""
from libai.config import LazyCall
from libai.data.build import build_nlp_test_loader, build_nlp_train_loader
from libai.models.utils.lora import lora_model

from .llama_base_pydoc import (  # noqa: F401
    corpus, dataloader, graph, model as base_model, optim, tokenization, train,
)

model = LazyCall(lora_model)(
    model=base_model,
    target_modules=["query", "key_value"],
    rank=8,
    alpha=16.0,
    base_weights="output/llama_lora/base/model_final",
)

dataloader.train = LazyCall(build_nlp_train_loader)(
    dataset=[corpus("docstrings", "train")], num_workers=0
)
dataloader.test = [
    LazyCall(build_nlp_test_loader)(dataset=corpus("docstrings", "valid"), num_workers=0)
]

optim.lr = 5e-3
optim.weight_decay = 0.0

train.output_dir = "output/llama_lora/lora"
