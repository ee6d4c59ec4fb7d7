"""LoRA supervised fine-tuning of Mistral-7B-v0.1 (7.2B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/mistral_lora_sft.py \\
        model.base_weights=PATH/TO/Mistral-7B-Instruct-v0.1 \\
        tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/Mistral-7B-Instruct-v0.1
    python tools/train_net.py --config-file configs/mistral_lora_sft.py --dry-run --world-size 8
    python tools/train_net.py --config-file configs/mistral_lora_sft.py --smoke

The model node is ``lora_model(model=<Mistral-7B-v0.1>, ...)``: it loads ``base_weights`` (the Hugging Face
directory, which also gives the tokenizer and chat template), adapts every attention and MLP
projection and freezes the rest; save the adapter alone with libai.models.utils.lora.save_lora.
Mistral-7B-Instruct-v0.1's template wraps user turns in [INST] ... [/INST] (the response ends
with </s>) and has no system role: a conversation with a system turn is skipped, named and
counted (the template's "roles must alternate"); fold the system text into the first user turn.
(configs/common/sft_recipe.py, docs/sft.md)
"""
from .common.models.llm_families import mistral_7b
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    mistral_7b(), model_dir="./models/Mistral-7B-Instruct-v0.1", name="mistral_lora_sft")  # placeholder: the HF directory
