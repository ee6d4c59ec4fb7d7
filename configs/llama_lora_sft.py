"""LoRA supervised fine-tuning of Llama-2-7B (6.7B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/llama_lora_sft.py \\
        model.base_weights=PATH/TO/Llama-2-7b-chat-hf \\
        tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/Llama-2-7b-chat-hf
    python tools/train_net.py --config-file configs/llama_lora_sft.py --dry-run --world-size 8
    python tools/train_net.py --config-file configs/llama_lora_sft.py --smoke

The model node is ``lora_model(model=<Llama-2-7B>, ...)``: it loads ``base_weights`` (the Hugging Face
directory, which also gives the tokenizer and chat template), adapts every attention and MLP
projection and freezes the rest; save the adapter alone with libai.models.utils.lora.save_lora.
Llama-2's chat template wraps each user turn in [INST] ... [/INST] and folds a system turn into the first.
(configs/common/sft_recipe.py, docs/sft.md)
"""
from .common.models.llama import llama2_7b
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    llama2_7b(), model_dir="./models/Llama-2-7b-chat-hf", name="llama_lora_sft")  # placeholder: the HF directory
