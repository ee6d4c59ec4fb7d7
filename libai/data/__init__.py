"""Data: sample structures, samplers, loaders and datasets.

The names below load their module on first use (:mod:`libai.utils.lazy_exports`), so that a
tool needing only :mod:`libai.data.data_utils` (``tools/preprocess_data.py``) does not import
OneFlow through the loader builders.
"""
from typing import TYPE_CHECKING

from libai.utils.lazy_exports import lazy_exports

_MODULES = {  # module -> the names it defines
    "libai.data.build": [
        "build_image_test_loader", "build_image_train_loader", "build_nlp_test_loader",
        "build_nlp_train_loader", "build_nlp_train_val_test_loader"
    ],
    "libai.data.augmentation": ["AugmentationPipeline"],
    "libai.data.samplers": ["CyclicSampler", "SingleRoundSampler"],
    "libai.data.structures": ["DistTensorData", "Instance"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from libai.data.augmentation import AugmentationPipeline  # noqa: F401
    from libai.data.build import (  # noqa: F401
        build_image_test_loader,
        build_image_train_loader,
        build_nlp_test_loader,
        build_nlp_train_loader,
        build_nlp_train_val_test_loader,
    )
    from libai.data.samplers import CyclicSampler, SingleRoundSampler  # noqa: F401
    from libai.data.structures import DistTensorData, Instance  # noqa: F401
