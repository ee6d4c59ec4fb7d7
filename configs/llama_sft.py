"""Full supervised fine-tuning of Llama-2-7B (6.7B parameters) on chat data, labels on assistant turns.

    python -m libai.launch --nproc_per_node 8 tools/train_net.py --config-file configs/llama_sft.py \\
        train.load_weight=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Llama-2's chat template wraps each user turn in [INST] ... [/INST] and folds a system turn into the first.
DIR is a local copy of Llama-2-7b-chat-hf (weights, tokenizer, chat template); docs/sft.md."""
from .common.models.llama import llama2_7b
from .common.sft_recipe import full_sft

model, train, optim, graph, dataloader, tokenization = full_sft(
    llama2_7b(), model_dir="./models/Llama-2-7b-chat-hf", name="llama_sft")  # placeholder: the HF directory
