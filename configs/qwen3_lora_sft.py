"""LoRA supervised fine-tuning of Qwen3-8B (8.2B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/qwen3_lora_sft.py \\
        model.base_weights=PATH/TO/Qwen3-8B \\
        tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/Qwen3-8B
    python tools/train_net.py --config-file configs/qwen3_lora_sft.py --dry-run --world-size 8
    python tools/train_net.py --config-file configs/qwen3_lora_sft.py --smoke

The model node is ``lora_model(model=<Qwen3-8B>, ...)``: it loads ``base_weights`` (the Hugging Face
directory, which also gives the tokenizer and chat template), adapts every attention and MLP
projection and freezes the rest; save the adapter alone with libai.models.utils.lora.save_lora.
Qwen3 shares Qwen2's tokenizer; its template is ChatML with reasoning
(<think>) blocks, rendered as the directory gives it.
(configs/common/sft_recipe.py, docs/sft.md)
"""
from .common.models.llm_families import qwen3_8b
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    qwen3_8b(), model_dir="./models/Qwen3-8B", name="qwen3_lora_sft")  # placeholder: the HF directory
