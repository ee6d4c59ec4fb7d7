"""Swin Transformer (V1) config: ``from configs.common.models.swin import model``.

The defaults are a small Swin for 32×32 images (CIFAR) that trains on a CPU: 2-pixel patches
give a 16×16 map, three stages at 16², 8² and 4² tokens with 4×4 windows. Swin-T on ImageNet is
img_size=224, patch_size=4, embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24),
window_size=7, drop_path_rate=0.2 (Swin-S: depths (2, 2, 18, 2), drop_path_rate=0.3; Swin-B:
embed_dim=128, num_heads=(4, 8, 16, 32)). Every head count must be divisible by
``train.dist.tensor_parallel_size`` (Swin-T's 3 heads allow tensor_parallel_size=1 or 3).
A pipelined run sets ``train.dist.pipeline_num_layers = sum(model.depths)``.
Published sizes: ``swin_preset(size)`` and ``swin_{tiny,small,base}_patch4_window7_224()`` at the end.
"""
import copy

from libai.config import LazyCall
from libai.models import SwinTransformer

# The small CPU defaults (Swin-T's values in the comments), shared by SwinV2's config.
_SMALL_SWIN = dict(
    img_size=32,  # Swin-T: 224
    patch_size=2,  # Swin-T: 4
    in_chans=3,
    num_classes=100,  # ImageNet: 1000
    embed_dim=64,  # Swin-T: 96
    depths=[2, 2, 2],  # Swin-T: [2, 2, 6, 2]
    num_heads=[2, 4, 8],  # Swin-T: [3, 6, 12, 24]
    window_size=4,  # Swin-T: 7 (each stage's map must be a multiple of it)
    mlp_ratio=4.0,
    qkv_bias=True,
    drop_rate=0.0,
    attn_drop_rate=0.0,
    drop_path_rate=0.1,  # Swin-T: 0.2
    patch_norm=True,
)
model = LazyCall(SwinTransformer)(
    **_SMALL_SWIN,
    loss_func=None,  # None = cross entropy on hard labels or soft targets
)


# Named sizes (the Swin paper's and LiBai's names) at 224×224 with 7×7 windows.
_SWIN_SIZES = {
    "tiny": dict(embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24], drop_path_rate=0.2),
    "small": dict(embed_dim=96, depths=[2, 2, 18, 2], num_heads=[3, 6, 12, 24], drop_path_rate=0.3),
    "base": dict(embed_dim=128, depths=[2, 2, 18, 2], num_heads=[4, 8, 16, 32], drop_path_rate=0.5),
}


def swin_preset(size: str, num_classes: int = 1000):
    """A fresh Swin node at a named size (``"tiny"``, ``"small"``, ``"base"``), patch 4, window 7,
    224×224 inputs; every field stays editable on the returned node."""
    if size not in _SWIN_SIZES:
        raise ValueError(f"unknown Swin size {size!r}; choose one of {sorted(_SWIN_SIZES)}")
    node = copy.deepcopy(model)
    node.update(img_size=224, patch_size=4, window_size=7, num_classes=num_classes, **_SWIN_SIZES[size])
    return node


# LiBai's preset names, as functions (each call returns a new node).
def swin_tiny_patch4_window7_224():
    return swin_preset("tiny")


def swin_small_patch4_window7_224():
    return swin_preset("small")


def swin_base_patch4_window7_224():
    return swin_preset("base")
