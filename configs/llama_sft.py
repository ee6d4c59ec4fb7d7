"""Full supervised fine-tuning of Llama-2-7B on chat data, labels on assistant turns only.

    python -m libai.launch --nproc_per_node 8 tools/train_net.py \\
        --config-file configs/llama_sft.py train.load_weight=PATH/TO/Llama-2-7b-hf \\
        "tokenization.tokenizer.pretrained_model_name_or_path=PATH/TO/Llama-2-7b-hf"
    python tools/train_net.py --config-file configs/llama_sft.py --dry-run --world-size 8 \\
        --device-memory 80GiB         # the plan on 8 x 80 GB, without training
    python tools/train_net.py --config-file configs/llama_sft.py --smoke ...   # a tiny first try

Data (configs/common/data/sft.py): ``{"messages": [...]}`` JSON lines rendered by the model's
chat template, packed into 2,048-token sequences; the held-out split's response-only loss is the
evaluation. The default layout is data parallel over every rank with ZeRO stage 2 and activation
checkpointing (what 8 x 80 GB needs for 7B parameters with AdamW); set
``train.dist.tensor_parallel_size`` / ``pipeline_parallel_size`` for others. docs/sft.md.
"""
from .common.data.sft import SEQ, dataloader, response_loss_evaluation, tokenization  # noqa: F401
from .common.models.graph import graph
from .common.models.llama import llama2_7b
from .common.optim import optim
from .common.train import train

model = llama2_7b()
model.cfg.max_position_embeddings = SEQ

optim.lr = 2e-5
optim.weight_decay = 0.0

train.update(
    dict(
        output_dir="./output/llama_sft",
        load_weight="./models/Llama-2-7b-chat-hf",  # placeholder: the base model (HF directory)
        train_micro_batch_size=1,
        num_accumulation_steps=8,
        test_micro_batch_size=1,
        train_epoch=3,
        train_iter=0,
        warmup_ratio=0.03,
        log_period=10,
    )
)
train.activation_checkpoint.enabled = True
graph.enabled = True  # ZeRO is a Graph-mode feature in OneFlow 0.9
train.zero_optimization.enabled = True
train.zero_optimization.stage = 2
train.amp.enabled = True  # bfloat16/float16 on CUDA; the CPU runs float32
train.evaluation.update(response_loss_evaluation(200))
train.dist.pipeline_num_layers = model.cfg.hidden_layers
