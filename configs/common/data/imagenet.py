"""ImageNet loaders from class-per-folder trees: ``./data/imagenet/{train,val}/<class>/*.JPEG``.

Training uses RandomResizedCrop(224) and flips; evaluation resizes to 256 and centre-crops 224.
As in LiBai, the loader has no MixUp by default (``mixup_func=None``: hard labels, which
self-supervised projects such as MAE need); the recipes that train on soft targets add it with
``dataloader.train.mixup_func = deit_mixup(num_classes)``. Data set-up: docs/prepare_image_data.md.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_image_test_loader, build_image_train_loader
from libai.data.datasets import ImageFolderDataset
from libai.data.mixup import Mixup
from libai.data.transforms import build_image_transforms

_train_transform = LazyCall(build_image_transforms)(
    train=True, size=224, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225], crop="resized",
    hflip=0.5, interpolation="bicubic",
)
_test_transform = LazyCall(build_image_transforms)(
    train=False, size=224, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225], crop_pct=0.875,
    interpolation="bicubic",
)



def deit_mixup(num_classes: int = 1000):
    """DeiT's MixUp/CutMix with label smoothing (soft targets of width ``num_classes``), a new
    node on each call so that two recipes never share one."""
    return LazyCall(Mixup)(
        mixup_alpha=0.8, cutmix_alpha=1.0, prob=1.0, switch_prob=0.5, label_smoothing=0.1,
        num_classes=num_classes,
    )


dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_image_train_loader)(
    dataset=[
        LazyCall(ImageFolderDataset)(root="./data/imagenet/train", transform=_train_transform),
    ],
    num_workers=4,
    mixup_func=None,
)
dataloader.test = [
    LazyCall(build_image_test_loader)(
        dataset=LazyCall(ImageFolderDataset)(
            root="./data/imagenet/val", transform=_test_transform
        ),
        num_workers=4,
    )
]
