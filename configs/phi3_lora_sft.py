"""LoRA supervised fine-tuning of Phi-3-mini-4k (3.8B parameters) on chat data: base frozen, rank-16 adapters.

    python -m libai.launch --nproc_per_node 2 tools/train_net.py --config-file configs/phi3_lora_sft.py \\
        model.base_weights=PATH/TO/Phi-3-mini-4k-instruct \\
        tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/Phi-3-mini-4k-instruct
    python tools/train_net.py --config-file configs/phi3_lora_sft.py --dry-run --world-size 8
    python tools/train_net.py --config-file configs/phi3_lora_sft.py --smoke

The model node is ``lora_model(model=<Phi-3-mini-4k>, ...)``: it loads ``base_weights`` (the Hugging Face
directory, which also gives the tokenizer and chat template), adapts every attention and MLP
projection and freezes the rest; save the adapter alone with libai.models.utils.lora.save_lora.
Phi-3's template marks turns <|user|> ... <|end|>; its fused qkv_proj / gate_up_proj are
split on import into libai's query + key_value and dense_h_to_4h + dense_h_to_4h_linear,
which LoRA_TARGETS adapt.
(configs/common/sft_recipe.py, docs/sft.md)
"""
from .common.models.llm_families import phi3_mini
from .common.sft_recipe import lora_sft

model, train, optim, graph, dataloader, tokenization = lora_sft(
    phi3_mini(), model_dir="./models/Phi-3-mini-4k-instruct", name="phi3_lora_sft")  # placeholder: the HF directory
