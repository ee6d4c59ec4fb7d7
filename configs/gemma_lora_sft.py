"""LoRA supervised fine-tuning of Gemma-7B (8.5B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/gemma_lora_sft.py \\
        model.base_weights=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Gemma's template has no system role: it raises "System role not supported", so a
conversation that starts with a system turn is skipped, named (file and line) and counted in
the dataset's report; fold the system text into the first user turn to keep it.
DIR is a local copy of gemma-7b-it; save the adapter with lora.save_lora; docs/sft.md."""
from .common.models.llm_families import gemma_7b
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    gemma_7b(), model_dir="./models/gemma-7b-it", name="gemma_lora_sft")  # placeholder: the HF directory
