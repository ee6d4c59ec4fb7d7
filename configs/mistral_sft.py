"""Full supervised fine-tuning of Mistral-7B-v0.1 (7.2B parameters) on chat data, labels on assistant turns.

    python -m libai.launch --nproc_per_node 8 tools/train_net.py --config-file configs/mistral_sft.py \\
        train.load_weight=PATH/TO/Mistral-7B-Instruct-v0.1 \\
        tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/Mistral-7B-Instruct-v0.1
    python tools/train_net.py --config-file configs/mistral_sft.py --dry-run --world-size 8   # 8 x 80 GB
    python tools/train_net.py --config-file configs/mistral_sft.py --smoke                   # a first try

The Hugging Face directory gives the weights, tokenizer and chat template.
Mistral-7B-Instruct-v0.1's template wraps user turns in [INST] ... [/INST] (the response ends
with </s>) and has no system role: a conversation with a system turn is skipped, named and
counted (the template's "roles must alternate"); fold the system text into the first user turn.
Data parallel with ZeRO-2 by default; train.dist.tensor_parallel_size / pipeline_parallel_size
for other layouts (configs/common/sft_recipe.py, docs/sft.md).
"""
from .common.models.llm_families import mistral_7b
from .common.sft_recipe import full_sft

model, train, optim, graph, dataloader, tokenization = full_sft(
    mistral_7b(), model_dir="./models/Mistral-7B-Instruct-v0.1", name="mistral_sft")  # placeholder: the HF directory
