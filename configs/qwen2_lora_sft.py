"""LoRA supervised fine-tuning of Qwen2-7B (7.6B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/qwen2_lora_sft.py \\
        model.base_weights=PATH/TO/Qwen2-7B-Instruct \\
        tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/Qwen2-7B-Instruct
    python tools/train_net.py --config-file configs/qwen2_lora_sft.py --dry-run --world-size 8
    python tools/train_net.py --config-file configs/qwen2_lora_sft.py --smoke

The model node is ``lora_model(model=<Qwen2-7B>, ...)``: it loads ``base_weights`` (the Hugging Face
directory, which also gives the tokenizer and chat template), adapts every attention and MLP
projection and freezes the rest; save the adapter alone with libai.models.utils.lora.save_lora.
Qwen2's template is ChatML (<|im_start|>role ... <|im_end|>); the trained response ends with
<|im_end|>, so the model learns to stop.
(configs/common/sft_recipe.py, docs/sft.md)
"""
from .common.models.llm_families import qwen2_7b
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    qwen2_7b(), model_dir="./models/Qwen2-7B-Instruct", name="qwen2_lora_sft")  # placeholder: the HF directory
