"""AlexNet on ImageNet-1k from OFRecord parts: OneFlow's classic AlexNet example as a recipe.

SGD with momentum 0.9 from lr 0.01, 90 epochs, hard labels, weight decay 5e-5 on the weights
(not biases), 224×224 random-resized crops; evaluation reports Acc@1 / Acc@5.

    python tools/train_net.py --config-file configs/alexnet_imagenet_ofrecord.py
    python -m oneflow.distributed.launch --nproc_per_node 8 tools/train_net.py \\
        --config-file configs/alexnet_imagenet_ofrecord.py          # data parallel
    # continue an interrupted run from output_dir/last_checkpoint:
    python tools/train_net.py --config-file configs/alexnet_imagenet_ofrecord.py --resume
    # start from saved weights (fresh optimizer and schedule):
    python tools/train_net.py --config-file configs/alexnet_imagenet_ofrecord.py \\
        train.load_weight=output/alexnet_imagenet_ofrecord/model_final

AlexNet is data-parallel only: keep train.dist.pipeline_parallel_size=1.
"""
from .common.data.imagenet_ofrecord import dataloader
from .common.models.alexnet import model
from .common.models.graph import graph
from .common.sgd import optim
from .common.train import train

# Placeholders: write the OFRecord parts with tools/images_to_ofrecord.py (docs/prepare_image_data.md).
dataloader.train.dataset[0].root = "./data/imagenet/ofrecord/train"
dataloader.test[0].dataset.root = "./data/imagenet/ofrecord/validation"
dataloader.train.mixup_func = None  # the classic example trains on hard labels

optim.lr = 0.01
optim.weight_decay = 5e-5

train.update(
    dict(
        output_dir="./output/alexnet_imagenet_ofrecord",
        train_micro_batch_size=512,
        test_micro_batch_size=512,
        train_iter=0,
        train_epoch=90,
        warmup_ratio=0.0,
        log_period=100,
    )
)
train.evaluation.eval_period = 2500
train.checkpointer.period = 2500
train.scheduler.update(warmup_factor=1.0, alpha=0.0)  # plain cosine decay to 0
