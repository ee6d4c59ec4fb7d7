"""SwinV2-T (window 8, 256×256) on ImageNet-1k from class-per-folder trees (MixUp/CutMix,
300 epochs): configs/swin_imagenet.py with the V2 model.

    python tools/train_net.py --config-file configs/swinv2_imagenet.py
    python -m oneflow.distributed.launch --nproc_per_node 8 tools/train_net.py \\
        --config-file configs/swinv2_imagenet.py

SwinV2-S and SwinV2-B (windows 8 or 16): ``swinv2_small_patch4_window8_256``,
``swinv2_base_patch4_window16_256``, ... in configs/common/models/swinv2.py.
"""
from .common.models.swinv2 import swinv2_tiny_patch4_window8_256
from .swin_imagenet import dataloader, graph, optim, train

model = swinv2_tiny_patch4_window8_256()

train.output_dir = "./output/swinv2_imagenet"
train.dist.pipeline_num_layers = sum(model.depths)
