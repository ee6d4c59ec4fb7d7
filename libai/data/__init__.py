"""Data: sample structures, samplers, loaders and datasets."""
from libai.data.build import (
    build_image_test_loader,
    build_image_train_loader,
    build_nlp_test_loader,
    build_nlp_train_loader,
    build_nlp_train_val_test_loader,
)
from libai.data.augmentation import AugmentationPipeline
from libai.data.samplers import CyclicSampler, SingleRoundSampler
from libai.data.structures import DistTensorData, Instance

__all__ = [
    "AugmentationPipeline",
    "build_nlp_train_val_test_loader",
    "DistTensorData",
    "Instance",
    "CyclicSampler",
    "SingleRoundSampler",
    "build_image_train_loader",
    "build_image_test_loader",
    "build_nlp_train_loader",
    "build_nlp_test_loader",
]
