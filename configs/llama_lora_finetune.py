"""LoRA fine-tuning of a Llama-style model: base weights frozen, rank-8 adapters on attention.

    python tools/train_net.py --config-file configs/llama_lora_finetune.py \\
        model.base_weights=PATH/TO/BASE    # a libai checkpoint (model_final) or a HF directory
    python -m oneflow.distributed.launch --nproc_per_node 2 tools/train_net.py \\
        --config-file configs/llama_lora_finetune.py train.dist.tensor_parallel_size=2

The model node is ``lora_model(model=<Llama>, ...)``: it loads ``base_weights`` into the plain
model, then adds LoRA to every ``query`` / ``key_value`` projection and freezes everything else,
so the optimizer sees only the adapters. Save the adapter alone afterwards with
``libai.models.utils.lora.save_lora`` (projects/llama_lora/save_adapter.py does it from a
checkpoint). The model is the tiny preset of configs/common/models/llama.py; ``llama2_7b()``
there gives Llama-2-7B's shape (with ``base_weights`` pointing at its Hugging Face directory).
"""
from libai.config import LazyCall
from libai.models.utils.lora import lora_model

from .common.data.gpt_dataset import dataloader, tokenization
from .common.models.graph import graph
from .common.models.llama import llama_tiny
from .common.optim import optim
from .common.train import ppl_evaluation, train

SEQ = 128

model = LazyCall(lora_model)(
    model=llama_tiny(),
    target_modules=["query", "key_value"],
    rank=8,
    alpha=16.0,
    dropout=0.05,
    # Placeholder: the base model to adapt (see docs/llama_and_lora.md for making one).
    base_weights="./output/llama_base/model_final",
)

# Placeholders: make the vocabulary, merges and corpus as in docs/prepare_text_data.md.
tokenization.tokenizer.vocab_file = "./data/llama_lora/vocab/vocab.json"
tokenization.tokenizer.merges_file = "./data/llama_lora/vocab/merges.txt"
tokenization.append_eod = True
for _dataset in [dataloader.train.dataset[0], dataloader.test[0].dataset]:
    _dataset.data_prefix = "./data/llama_lora/docstrings_text_document"
    _dataset.max_seq_length = SEQ
dataloader.train.num_workers = 0
dataloader.test[0].num_workers = 0

optim.lr = 1e-3
optim.weight_decay = 0.0

train.update(
    dict(
        output_dir="./output/llama_lora_finetune",
        train_micro_batch_size=8,
        test_micro_batch_size=8,
        train_iter=1000,
        warmup_ratio=0.03,
        log_period=20,
    )
)
train.evaluation.update(ppl_evaluation(200))
train.dist.pipeline_num_layers = model.model.cfg.hidden_layers
