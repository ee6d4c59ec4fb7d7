"""Full supervised fine-tuning of Phi-3-mini-4k (3.8B parameters) on chat data, labels on assistant turns.

    python -m libai.launch --nproc_per_node 8 tools/train_net.py --config-file configs/phi3_sft.py \\
        train.load_weight=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Phi-3's template marks turns <|user|> ... <|end|>; its fused qkv_proj / gate_up_proj are
split on import into libai's query + key_value and dense_h_to_4h + dense_h_to_4h_linear,
which LoRA_TARGETS adapt.
DIR is a local copy of Phi-3-mini-4k-instruct (weights, tokenizer, chat template); docs/sft.md."""
from .common.models.llm_families import phi3_mini
from .common.sft_recipe import full_sft

model, train, optim, graph, dataloader, tokenization = full_sft(
    phi3_mini(), model_dir="./models/Phi-3-mini-4k-instruct", name="phi3_sft")  # placeholder: the HF directory
