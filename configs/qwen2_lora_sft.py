"""LoRA supervised fine-tuning of Qwen2-7B (7.6B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/qwen2_lora_sft.py \\
        model.base_weights=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Qwen2's template is ChatML (<|im_start|>role ... <|im_end|>); the trained response ends with
<|im_end|>, so the model learns to stop.
DIR is a local copy of Qwen2-7B-Instruct; save the adapter with lora.save_lora; docs/sft.md."""
from .common.models.llm_families import qwen2_7b
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    qwen2_7b(), model_dir="./models/Qwen2-7B-Instruct", name="qwen2_lora_sft")  # placeholder: the HF directory
