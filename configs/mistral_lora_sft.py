"""LoRA supervised fine-tuning of Mistral-7B-v0.1 (7.2B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/mistral_lora_sft.py \\
        model.base_weights=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Mistral-7B-Instruct-v0.1's template wraps user turns in [INST] ... [/INST] (the response ends
with </s>) and has no system role: a conversation with a system turn is skipped, named and
counted (the template's "roles must alternate"); fold the system text into the first user turn.
DIR is a local copy of Mistral-7B-Instruct-v0; save the adapter with lora.save_lora; docs/sft.md."""
from .common.models.llm_families import mistral_7b
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    mistral_7b(), model_dir="./models/Mistral-7B-Instruct-v0.1", name="mistral_lora_sft")  # placeholder: the HF directory
