"""Full supervised fine-tuning of Mistral-7B-v0.1 (7.2B parameters) on chat data, labels on assistant turns.

    python -m libai.launch --nproc_per_node 8 tools/train_net.py --config-file configs/mistral_sft.py \\
        train.load_weight=DIR tokenization.tokenizer.pretrained_model_name_or_path=DIR

Mistral-7B-Instruct-v0.1's template wraps user turns in [INST] ... [/INST] (the response ends
with </s>) and has no system role: a conversation with a system turn is skipped, named and
counted (the template's "roles must alternate"); fold the system text into the first user turn.
DIR is a local copy of Mistral-7B-Instruct-v0 (weights, tokenizer, chat template); docs/sft.md."""
from .common.models.llm_families import mistral_7b
from .common.sft_recipe import full_sft

model, train, optim, graph, dataloader, tokenization = full_sft(
    mistral_7b(), model_dir="./models/Mistral-7B-Instruct-v0.1", name="mistral_sft")  # placeholder: the HF directory
