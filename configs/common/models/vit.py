"""Vision Transformer config: ``from configs.common.models.vit import model``.

The defaults are a small ViT for 32×32 images (CIFAR) that trains on a CPU: 8×8 patches of 4
pixels, 6 blocks of width 192. ViT-B/16 on ImageNet is img_size=224, patch_size=16,
embed_dim=768, depth=12, num_heads=12, num_classes=1000 (ViT-S/16: 384 / 12 / 6; ViT-L/16:
1024 / 24 / 16). ``num_heads`` must be divisible by ``train.dist.tensor_parallel_size``.
A pipelined run sets ``train.dist.pipeline_num_layers = model.depth``.
The default loss takes hard labels and the soft targets of MixUp/CutMix.
Published sizes: ``vit_preset(size, patch_size)`` and ``vit_{tiny,small,base,large}_patch{16,32}_224()``
at the end of this file.
"""
import copy

from libai.config import LazyCall
from libai.models import VisionTransformer

model = LazyCall(VisionTransformer)(
    img_size=32,  # ViT-B/16: 224
    patch_size=4,  # ViT-B/16: 16
    in_chans=3,
    embed_dim=192,  # ViT-B/16: 768
    depth=6,  # ViT-B/16: 12
    num_heads=4,  # ViT-B/16: 12 (even here so tensor_parallel_size=2 or 4 works)
    mlp_ratio=4.0,
    drop_rate=0.0,
    attn_drop_rate=0.0,
    drop_path_rate=0.1,  # stochastic depth of the last block
    num_classes=100,  # ImageNet: 1000
    loss_func=None,  # None = cross entropy on hard labels or soft targets
)


# Named sizes (the ViT paper's and LiBai's names): width, blocks, heads.
_VIT_SIZES = {"tiny": (192, 12, 3), "small": (384, 12, 6), "base": (768, 12, 12), "large": (1024, 24, 16)}


def vit_preset(size: str, patch_size: int = 16, img_size: int = 224, num_classes: int = 1000):
    """A fresh ViT node at a named size (``"tiny"``, ``"small"``, ``"base"``, ``"large"``).

    The defaults match the ImageNet-1k recipes (224×224 inputs, 1000 classes); every field stays
    editable on the returned node (``model.num_classes = 100``).
    """
    if size not in _VIT_SIZES:
        raise ValueError(f"unknown ViT size {size!r}; choose one of {sorted(_VIT_SIZES)}")
    embed_dim, depth, num_heads = _VIT_SIZES[size]
    node = copy.deepcopy(model)  # the small default above, then the named size over it
    node.update(img_size=img_size, patch_size=patch_size, embed_dim=embed_dim, depth=depth,
                num_heads=num_heads, num_classes=num_classes, drop_path_rate=0.0)
    return node


# LiBai's preset names, as functions (each call returns a new node).
def vit_tiny_patch16_224():
    return vit_preset("tiny", 16)


def vit_tiny_patch32_224():
    return vit_preset("tiny", 32)


def vit_small_patch16_224():
    return vit_preset("small", 16)


def vit_small_patch32_224():
    return vit_preset("small", 32)


def vit_base_patch16_224():
    return vit_preset("base", 16)


def vit_base_patch32_224():
    return vit_preset("base", 32)


def vit_large_patch16_224():
    return vit_preset("large", 16)


def vit_large_patch32_224():
    return vit_preset("large", 32)
