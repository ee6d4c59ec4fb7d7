"""Data: sample structures, samplers, loaders and datasets."""
from libai.data.structures import DistTensorData, Instance

__all__ = ["DistTensorData", "Instance"]
