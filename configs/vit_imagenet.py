"""ViT-B/16 on ImageNet-1k from class-per-folder trees, DeiT-style (MixUp/CutMix, 300 epochs).

    python tools/train_net.py --config-file configs/vit_imagenet.py
    python -m oneflow.distributed.launch --nproc_per_node 8 tools/train_net.py \\
        --config-file configs/vit_imagenet.py

Other sizes: ``vit_tiny_patch16_224`` ... ``vit_large_patch32_224`` in configs/common/models/vit.py.
"""
from .common.data.imagenet import dataloader, deit_mixup
from .common.models.graph import graph
from .common.models.vit import vit_base_patch16_224
from .common.optim import optim
from .common.train import train

model = vit_base_patch16_224()

# Placeholders: lay ImageNet out as in docs/prepare_image_data.md.
dataloader.train.dataset[0].root = "./data/imagenet/train"
dataloader.test[0].dataset.root = "./data/imagenet/val"
dataloader.train.mixup_func = deit_mixup(model.num_classes)

optim.lr = 1e-3  # 5e-4 per 512 images, for a global batch of 1024
optim.weight_decay = 0.05
optim.params.clip_grad_max_norm = None
optim.params.clip_grad_norm_type = None
# no weight decay on the position embeddings and the class token (DeiT)
optim.params.overrides = {"pos_embed": {"weight_decay": 0.0}, "cls_token": {"weight_decay": 0.0}}

train.update(
    dict(
        output_dir="./output/vit_imagenet",
        train_micro_batch_size=128,
        test_micro_batch_size=128,
        train_iter=0,
        train_epoch=300,
        warmup_ratio=5 / 300,
        log_period=20,
    )
)
train.evaluation.eval_period = 1000
train.scheduler.update(warmup_factor=0.001, alpha=0.01, warmup_method="linear")
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
train.dist.pipeline_num_layers = model.depth
