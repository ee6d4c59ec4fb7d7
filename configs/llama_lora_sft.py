"""LoRA supervised fine-tuning of Llama-2-7B on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py \\
        --config-file configs/llama_lora_sft.py model.base_weights=PATH/TO/Llama-2-7b-hf \\
        "tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/Llama-2-7b-hf"
    python tools/train_net.py --config-file configs/llama_lora_sft.py --dry-run --world-size 8 \\
        --device-memory 80GiB

The model node is ``lora_model(model=<Llama-2-7B>, ...)``: it loads ``base_weights`` (a libai
checkpoint or a Hugging Face directory), adds LoRA to the attention and MLP projections and
freezes everything else. Data as in configs/llama_sft.py (configs/common/data/sft.py). Save the
adapter alone with ``libai.models.utils.lora.save_lora``. docs/sft.md.
"""
from libai.config import LazyCall
from libai.models.utils.lora import lora_model

from .common.data.sft import SEQ, dataloader, response_loss_evaluation, tokenization  # noqa: F401
from .common.models.graph import graph
from .common.models.llama import llama2_7b
from .common.optim import optim
from .common.train import train

_base = llama2_7b()
_base.cfg.max_position_embeddings = SEQ
model = LazyCall(lora_model)(
    model=_base,
    target_modules=["query", "key_value", "dense", "dense_h_to_4h", "dense_h_to_4h_linear",
                    "dense_4h_to_h"],
    rank=16,
    alpha=32.0,
    dropout=0.05,
    base_weights="./models/Llama-2-7b-chat-hf",  # placeholder: the base model (HF directory)
)

optim.lr = 2e-4
optim.weight_decay = 0.0

train.update(
    dict(
        output_dir="./output/llama_lora_sft",
        train_micro_batch_size=2,
        num_accumulation_steps=4,
        test_micro_batch_size=2,
        train_epoch=3,
        train_iter=0,
        warmup_ratio=0.03,
        log_period=10,
    )
)
train.activation_checkpoint.enabled = True
train.amp.enabled = True
train.evaluation.update(response_loss_evaluation(200))
train.dist.pipeline_num_layers = _base.cfg.hidden_layers
