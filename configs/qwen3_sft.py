"""Full supervised fine-tuning of Qwen3-8B (8.2B parameters) on chat data, labels on assistant turns.

    python -m libai.launch --nproc_per_node 8 tools/train_net.py --config-file configs/qwen3_sft.py \\
        train.load_weight=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Qwen3 shares Qwen2's tokenizer; its ChatML template gives the last assistant turn an empty
<think></think> block and earlier turns none: each turn is trained as the whole renders it.
DIR is a local copy of Qwen3-8B (weights, tokenizer, chat template); docs/sft.md."""
from .common.models.llm_families import qwen3_8b
from .common.sft_recipe import full_sft

model, train, optim, graph, dataloader, tokenization = full_sft(
    qwen3_8b(), model_dir="./models/Qwen3-8B", name="qwen3_sft")  # placeholder: the HF directory
