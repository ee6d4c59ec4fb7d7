"""Swin Transformer V2 config: ``from configs.common.models.swinv2 import model``.

The defaults are a small SwinV2 for 32×32 images (CIFAR) that trains on a CPU: 2-pixel patches
give a 16×16 map, three stages at 16², 8² and 4² tokens with 4×4 windows. The named sizes are
the paper's (and LiBai's) at 256×256 with 4-pixel patches and 8×8 or 16×16 windows:
SwinV2-T embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), drop_path_rate=0.2;
SwinV2-S depths (2, 2, 18, 2), drop_path_rate=0.3; SwinV2-B embed_dim=128,
num_heads=(4, 8, 16, 32), drop_path_rate=0.5. ``pretrained_window_sizes`` (per stage) is the
window the weights were pretrained with when fine-tuning at another window (0: none).
Every head count must be divisible by ``train.dist.tensor_parallel_size``; a pipelined run
sets ``train.dist.pipeline_num_layers = sum(model.depths)``.
"""
import copy

from libai.config import LazyCall
from libai.models import SwinTransformerV2

from .swin import _SMALL_SWIN, _SWIN_SIZES

# The small CPU defaults are Swin's (configs/common/models/swin.py; the V2 sizes of the
# docstring are what swinv2_preset sets); V2 adds the windows its weights were pretrained with.
model = LazyCall(SwinTransformerV2)(
    **_SMALL_SWIN,
    pretrained_window_sizes=[0, 0, 0, 0],
    loss_func=None,  # None = cross entropy on hard labels or soft targets
)


# SwinV2's named sizes are Swin's (widths, depths, heads, stochastic depth); only the input
# size and the windows differ.
_SWINV2_SIZES = _SWIN_SIZES


def swinv2_preset(size: str, window_size: int = 8, num_classes: int = 1000):
    """A fresh SwinV2 node at a named size (``"tiny"``, ``"small"``, ``"base"``), patch 4,
    256×256 inputs, ``window_size`` 8 or 16; every field stays editable on the returned node."""
    if size not in _SWINV2_SIZES:
        raise ValueError(f"unknown SwinV2 size {size!r}; choose one of {sorted(_SWINV2_SIZES)}")
    if window_size not in (8, 16):
        raise ValueError(f"SwinV2 presets use 8×8 or 16×16 windows at 256×256, got {window_size}")
    node = copy.deepcopy(model)
    node.update(img_size=256, patch_size=4, window_size=window_size, num_classes=num_classes,
                **_SWINV2_SIZES[size])
    return node


# LiBai's preset names, as functions (each call returns a new node).
def swinv2_tiny_patch4_window8_256():
    return swinv2_preset("tiny", 8)


def swinv2_tiny_patch4_window16_256():
    return swinv2_preset("tiny", 16)


def swinv2_small_patch4_window8_256():
    return swinv2_preset("small", 8)


def swinv2_small_patch4_window16_256():
    return swinv2_preset("small", 16)


def swinv2_base_patch4_window8_256():
    return swinv2_preset("base", 8)


def swinv2_base_patch4_window16_256():
    return swinv2_preset("base", 16)
