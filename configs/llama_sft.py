"""Full supervised fine-tuning of Llama-2-7B (6.7B parameters) on chat data, labels on assistant turns.

    python -m libai.launch --nproc_per_node 8 tools/train_net.py --config-file configs/llama_sft.py \\
        train.load_weight=PATH/TO/Llama-2-7b-chat-hf \\
        tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/Llama-2-7b-chat-hf
    python tools/train_net.py --config-file configs/llama_sft.py --dry-run --world-size 8   # 8 x 80 GB
    python tools/train_net.py --config-file configs/llama_sft.py --smoke                   # a first try

The Hugging Face directory gives the weights, tokenizer and chat template.
Llama-2's chat template wraps each user turn in [INST] ... [/INST] and folds a system turn into the first.
Data parallel with ZeRO-2 by default; train.dist.tensor_parallel_size / pipeline_parallel_size
for other layouts (configs/common/sft_recipe.py, docs/sft.md).
"""
from .common.models.llama import llama2_7b
from .common.sft_recipe import full_sft

model, train, optim, graph, dataloader, tokenization = full_sft(
    llama2_7b(), model_dir="./models/Llama-2-7b-chat-hf", name="llama_sft")  # placeholder: the HF directory
