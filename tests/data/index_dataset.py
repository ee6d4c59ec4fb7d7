"""The image dataset the loader tests read: sample ``i`` says which index it is."""
import libai  # noqa: F401  (before oneflow)
import oneflow as flow
from oneflow.utils.data import Dataset

from libai.data.structures import DistTensorData, Instance


class IndexDataset(Dataset):
    """Sample ``i`` carries ``i`` as its label and ``i`` filled into a 2×2 image, so a batch tells
    exactly which indices it holds."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return Instance(
            images=DistTensorData(flow.full((1, 2, 2), float(i))),
            labels=DistTensorData(flow.tensor(i, dtype=flow.long), placement_idx=-1),
        )
