"""Full supervised fine-tuning of Gemma-7B (8.5B parameters) on chat data, labels on assistant turns.

    python -m libai.launch --nproc_per_node 8 tools/train_net.py --config-file configs/gemma_sft.py \\
        train.load_weight=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Gemma's template has no system role: it raises "System role not supported", so a
conversation that starts with a system turn is skipped, named (file and line) and counted in
the dataset's report; fold the system text into the first user turn to keep it.
DIR is a local copy of gemma-7b-it (weights, tokenizer, chat template); docs/sft.md."""
from .common.models.llm_families import gemma_7b
from .common.sft_recipe import full_sft

model, train, optim, graph, dataloader, tokenization = full_sft(
    gemma_7b(), model_dir="./models/gemma-7b-it", name="gemma_sft")  # placeholder: the HF directory
