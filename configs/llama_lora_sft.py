"""LoRA supervised fine-tuning of Llama-2-7B (6.7B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/llama_lora_sft.py \\
        model.base_weights=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Llama-2's chat template wraps each user turn in [INST] ... [/INST] and folds a system turn into the first.
DIR is a local copy of Llama-2-7b-chat-hf; save the adapter with lora.save_lora; docs/sft.md."""
from .common.models.llama import llama2_7b
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    llama2_7b(), model_dir="./models/Llama-2-7b-chat-hf", name="llama_lora_sft")  # placeholder: the HF directory
