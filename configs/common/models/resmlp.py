"""ResMLP config: ``from configs.common.models.resmlp import model`` (ResMLP-12, ImageNet-1k).

Named sizes as functions returning fresh nodes, with the paper's/LiBai's LayerScale
initialisation for each depth: ``resmlp_12()`` (384 wide, 12 blocks, init_scale 0.1),
``resmlp_24()`` (1e-5), ``resmlp_36()`` (1e-6) and ``resmlpB_24()`` (768 wide, 8-pixel
patches, 1e-6). ``embed_dim`` must be divisible by train.dist.tensor_parallel_size; a pipelined
run sets ``train.dist.pipeline_num_layers = model.depth``.
"""
import copy

from libai.config import LazyCall
from libai.models import ResMLP

model = LazyCall(ResMLP)(
    img_size=224,
    patch_size=16,
    in_chans=3,
    embed_dim=384,
    depth=12,
    drop_rate=0.0,
    drop_path_rate=0.05,  # the same for every block
    init_scale=0.1,  # initial LayerScale; smaller for deeper models
    num_classes=1000,
    loss_func=None,  # None = cross entropy on hard labels or soft targets
)

# name -> (embed_dim, depth, patch_size, init_scale)
_RESMLP_SIZES = {
    "12": (384, 12, 16, 0.1),
    "24": (384, 24, 16, 1e-5),
    "36": (384, 36, 16, 1e-6),
    "B24": (768, 24, 8, 1e-6),
}


def resmlp_preset(size: str, num_classes: int = 1000):
    """A fresh ResMLP node at a named size (``"12"``, ``"24"``, ``"36"``, ``"B24"``)."""
    if size not in _RESMLP_SIZES:
        raise ValueError(f"unknown ResMLP size {size!r}; choose one of {sorted(_RESMLP_SIZES)}")
    embed_dim, depth, patch_size, init_scale = _RESMLP_SIZES[size]
    node = copy.deepcopy(model)
    node.update(embed_dim=embed_dim, depth=depth, patch_size=patch_size, init_scale=init_scale,
                num_classes=num_classes)
    return node


def resmlp_12():
    return resmlp_preset("12")


def resmlp_24():
    return resmlp_preset("24")


def resmlp_36():
    return resmlp_preset("36")


def resmlpB_24():  # noqa: N802  (LiBai's name)
    return resmlp_preset("B24")
