"""A small ViT classifying handwritten digits read from a class-per-folder tree.

Make the tree first, then train (from the repository root):

    python projects/image_classification/prepare_data.py --output-dir data/digits_folder
    python tools/train_net.py --config-file projects/image_classification/configs/vit_digits.py

It is libai's ImageNet recipe in miniature: the same ``ImageFolderDataset`` loaders, transforms
and ViT, at 32×32 pixels with 10 classes and no MixUp (a thousand images are too few for it).
"""
from libai.config import LazyCall
from libai.data.transforms import build_image_transforms
from libai.evaluation import ClsEvaluator

from configs.common.data.imagenet import dataloader
from configs.common.models.graph import graph
from configs.common.models.vit import vit_preset
from configs.common.optim import optim
from configs.common.train import train

DATA = "data/digits_folder"

# A ViT narrower than ViT-Tiny (width 64, 4 heads, 3 blocks) on 32×32 inputs cut into 4×4-pixel
# patches: it trains in minutes on a CPU. vit_preset("tiny", ...) is the next size up.
model = vit_preset("tiny", patch_size=4, img_size=32, num_classes=10)
model.update(embed_dim=64, depth=3, num_heads=4)

_mean, _std = [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]
dataloader.train.dataset[0].root = f"{DATA}/train"
dataloader.train.dataset[0].transform = LazyCall(build_image_transforms)(
    train=True, size=32, mean=_mean, std=_std, crop="pad", padding=2, hflip=0.0  # digits: no flips
)
dataloader.train.mixup_func = None
dataloader.train.num_workers = 0
dataloader.test[0].dataset.root = f"{DATA}/val"
dataloader.test[0].dataset.transform = LazyCall(build_image_transforms)(
    train=False, size=32, mean=_mean, std=_std, crop="none"
)
dataloader.test[0].num_workers = 0

optim.lr = 1e-3
optim.weight_decay = 0.05

train.update(
    dict(
        output_dir="output/image_classification",
        train_micro_batch_size=32,
        test_micro_batch_size=128,
        train_iter=0,
        train_epoch=8,
        warmup_ratio=0.05,
        log_period=20,
        checkpointer=dict(period=1000, max_to_keep=1),
    )
)
train.evaluation.evaluator = LazyCall(ClsEvaluator)(topk=(1, 5))
train.evaluation.eval_period = 100
train.dist.pipeline_num_layers = model.depth
