"""ResNet-50 on ImageNet-1k from class-per-folder trees (the classic 90-epoch SGD recipe).

SGD with momentum 0.9, lr 0.1 per 256 images (0.4 for the global batch of 1024 below: 8 ranks ×
128), 5 warm-up epochs then cosine decay, weight decay 1e-4 on weights only, label smoothing 0.1
through the data's MixUp object with MixUp/CutMix off.

    python -m oneflow.distributed.launch --nproc_per_node 8 tools/train_net.py \\
        --config-file configs/resnet50_imagenet.py

ResNet-18/34/101/152: ``resnet18()`` ... in configs/common/models/resnet.py. ResNet is
data-parallel only: keep train.dist.pipeline_parallel_size=1.
"""
from .common.data.imagenet import dataloader, deit_mixup
from .common.models.graph import graph
from .common.sgd import optim
from .common.models.resnet import resnet50
from .common.train import train

model = resnet50()

# Placeholders: lay ImageNet out as in docs/prepare_image_data.md.
dataloader.train.dataset[0].root = "./data/imagenet/train"
dataloader.test[0].dataset.root = "./data/imagenet/val"
dataloader.train.mixup_func = deit_mixup(model.num_classes)
dataloader.train.mixup_func.update(mixup_alpha=0.0, cutmix_alpha=0.0, label_smoothing=0.1)

optim.lr = 0.4

train.update(
    dict(
        output_dir="./output/resnet50_imagenet",
        train_micro_batch_size=128,
        test_micro_batch_size=128,
        train_iter=0,
        train_epoch=90,
        warmup_ratio=5 / 90,
        log_period=50,
    )
)
train.evaluation.eval_period = 5000
train.scheduler.update(warmup_factor=0.01, alpha=0.0, warmup_method="linear")
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
