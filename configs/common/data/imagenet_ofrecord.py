"""ImageNet loaders from OFRecord parts: ``./data/imagenet/ofrecord/{train,validation}/part-*``.

Write the parts with ``tools/images_to_ofrecord.py`` (docs/prepare_image_data.md). Transforms (and the
absence of MixUp) are those of ``imagenet.py``; only the datasets differ.
"""
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data.build import build_image_test_loader, build_image_train_loader
from libai.data.datasets import OFRecordImageDataset

from .imagenet import dataloader as _folder_dataloader

dataloader = OmegaConf.create()
dataloader.train = LazyCall(build_image_train_loader)(
    dataset=[
        LazyCall(OFRecordImageDataset)(
            root="./data/imagenet/ofrecord/train",
            transform=_folder_dataloader.train.dataset[0].transform,
        ),
    ],
    num_workers=4,
    mixup_func=_folder_dataloader.train.mixup_func,
)
dataloader.test = [
    LazyCall(build_image_test_loader)(
        dataset=LazyCall(OFRecordImageDataset)(
            root="./data/imagenet/ofrecord/validation",
            transform=_folder_dataloader.test[0].dataset.transform,
        ),
        num_workers=4,
    )
]
