"""LoRA supervised fine-tuning of Qwen3-8B (8.2B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/qwen3_lora_sft.py \\
        model.base_weights=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Qwen3 shares Qwen2's tokenizer; its ChatML template gives the last assistant turn an empty
<think></think> block and earlier turns none: each turn is trained as the whole renders it.
DIR is a local copy of Qwen3-8B; save the adapter with lora.save_lora; docs/sft.md."""
from .common.models.llm_families import qwen3_8b
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    qwen3_8b(), model_dir="./models/Qwen3-8B", name="qwen3_lora_sft")  # placeholder: the HF directory
