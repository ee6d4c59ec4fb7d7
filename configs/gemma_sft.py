"""Full supervised fine-tuning of Gemma-7B (8.5B parameters) on chat data, labels on assistant turns.

    python -m libai.launch --nproc_per_node 8 tools/train_net.py --config-file configs/gemma_sft.py \\
        train.load_weight=PATH/TO/gemma-7b-it \\
        tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/gemma-7b-it
    python tools/train_net.py --config-file configs/gemma_sft.py --dry-run --world-size 8   # 8 x 80 GB
    python tools/train_net.py --config-file configs/gemma_sft.py --smoke                   # a first try

The Hugging Face directory gives the weights, tokenizer and chat template.
Gemma's template has no system role: it raises "System role not supported", so a
conversation that starts with a system turn is skipped, named (file and line) and counted in
the dataset's report; fold the system text into the first user turn to keep it.
Data parallel with ZeRO-2 by default; train.dist.tensor_parallel_size / pipeline_parallel_size
for other layouts (configs/common/sft_recipe.py, docs/sft.md).
"""
from .common.models.llm_families import gemma_7b
from .common.sft_recipe import full_sft

model, train, optim, graph, dataloader, tokenization = full_sft(
    gemma_7b(), model_dir="./models/gemma-7b-it", name="gemma_sft")  # placeholder: the HF directory
