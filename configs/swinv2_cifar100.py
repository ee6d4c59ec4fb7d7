"""SwinV2-T (window 8) on CIFAR-100 (32×32 images upsampled to 256), MixUp/CutMix, 300 epochs.

    python tools/train_net.py --config-file configs/swinv2_cifar100.py
    python -m oneflow.distributed.launch --nproc_per_node 8 tools/train_net.py \\
        --config-file configs/swinv2_cifar100.py

Eager mode, fp32 and data parallel, as LiBai's recipe: configs/swin_cifar100.py with the V2
model, whose windows need 256×256 inputs (the shorter side resized to 256 / 0.875 for testing,
then centre-cropped to 256).
"""
from .common.models.swinv2 import swinv2_tiny_patch4_window8_256
from .swin_cifar100 import dataloader, graph, optim, train

model = swinv2_tiny_patch4_window8_256()
model.num_classes = 100

dataloader.train.dataset[0].transform.size = model.img_size
dataloader.test[0].dataset.transform.size = model.img_size

train.output_dir = "./output/swinv2_cifar100"
train.dist.pipeline_num_layers = sum(model.depths)
