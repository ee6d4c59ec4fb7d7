"""SwinV2-T (window 8, 256×256) on ImageNet-1k from class-per-folder trees (MixUp/CutMix,
300 epochs).

    python tools/train_net.py --config-file configs/swinv2_imagenet.py
    python -m oneflow.distributed.launch --nproc_per_node 8 tools/train_net.py \\
        --config-file configs/swinv2_imagenet.py

SwinV2-S and SwinV2-B (windows 8 or 16): ``swinv2_small_patch4_window8_256``,
``swinv2_base_patch4_window16_256``, ... in configs/common/models/swinv2.py.
"""
from .common.data.imagenet import dataloader, deit_mixup
from .common.models.graph import graph
from .common.models.swinv2 import swinv2_tiny_patch4_window8_256
from .common.optim import optim
from .common.train import train

model = swinv2_tiny_patch4_window8_256()

# Placeholders: lay ImageNet out as in docs/prepare_image_data.md.
dataloader.train.dataset[0].root = "./data/imagenet/train"
dataloader.test[0].dataset.root = "./data/imagenet/val"
dataloader.train.mixup_func = deit_mixup(model.num_classes)

optim.lr = 1e-3
optim.weight_decay = 0.05
optim.params.clip_grad_max_norm = None
optim.params.clip_grad_norm_type = None

train.update(
    dict(
        output_dir="./output/swinv2_imagenet",
        train_micro_batch_size=128,
        test_micro_batch_size=128,
        train_iter=0,
        train_epoch=300,
        warmup_ratio=20 / 300,
        log_period=100,
    )
)
train.evaluation.eval_period = 1562
train.scheduler.update(warmup_factor=0.001, alpha=0.01, warmup_method="linear")
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
train.dist.pipeline_num_layers = sum(model.depths)
