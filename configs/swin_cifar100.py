"""Swin-T on CIFAR-100 (32×32 images upsampled to 224), MixUp/CutMix, 300 epochs.

    python tools/train_net.py --config-file configs/swin_cifar100.py
    python -m oneflow.distributed.launch --nproc_per_node 8 tools/train_net.py \\
        --config-file configs/swin_cifar100.py

Eager mode, fp32 and data parallel, as LiBai's recipe.
"""
from libai.config import LazyCall
from libai.data.transforms import build_image_transforms

from .common.data.cifar100 import dataloader
from .common.models.graph import graph
from .common.models.swin import swin_tiny_patch4_window7_224
from .common.optim import optim
from .common.train import train

model = swin_tiny_patch4_window7_224()
model.num_classes = 100

# Placeholder: the folder holding cifar-100-python/ (docs/prepare_image_data.md).
dataloader.train.dataset[0].root = "./data/cifar"
dataloader.test[0].dataset.root = "./data/cifar"
# Swin-T's windows need 224×224 inputs: resize the 32×32 images (after the usual augmentation).
_mean, _std = [0.5071, 0.4865, 0.4409], [0.2673, 0.2564, 0.2762]
dataloader.train.dataset[0].transform = LazyCall(build_image_transforms)(
    train=True, size=model.img_size, mean=_mean, std=_std, crop="resized", hflip=0.5,
    interpolation="bicubic",
)
dataloader.test[0].dataset.transform = LazyCall(build_image_transforms)(
    train=False, size=model.img_size, mean=_mean, std=_std, crop_pct=0.875, interpolation="bicubic",
)  # resize to 256, centre-crop 224

optim.lr = 5e-4
optim.weight_decay = 0.05
optim.params.clip_grad_max_norm = None
optim.params.clip_grad_norm_type = None

train.update(
    dict(
        output_dir="./output/swin_cifar100",
        train_micro_batch_size=32,
        test_micro_batch_size=32,
        num_accumulation_steps=1,
        train_iter=0,
        train_epoch=300,
        warmup_ratio=20 / 300,
        log_period=20,
    )
)
train.evaluation.eval_period = 200
train.scheduler.update(warmup_factor=5e-7, alpha=0.0, warmup_method="linear")
train.dist.pipeline_num_layers = sum(model.depths)
graph.enabled = False
