"""``PatchEmbedding``: the first layer of the vision transformers (ViT, Swin, ...).

An image is cut into non-overlapping patches and each patch is projected to a vector by one
convolution whose kernel and stride are the patch size. ``trunc_normal_init`` is the
initialiser those models use, and ``to_2tuple`` reads an int-or-pair size from a config.
"""
import inspect
import math
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.layers.layer_norm import LayerNorm
from libai.layers.utils import broadcast, make_parameter, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["PatchEmbedding", "to_2tuple", "trunc_normal_init"]

Size2 = Union[int, Sequence[int]]


def to_2tuple(value: Size2, name: str) -> Tuple[int, int]:
    """``7 -> (7, 7)``; ``(h, w)`` stays. Configs may hold either (yaml turns tuples into lists)."""
    if isinstance(value, int):
        return value, value
    pair = tuple(int(v) for v in value)
    if len(pair) != 2:
        raise ValueError(f"{name} must be an int or a pair (height, width), got {value!r}")
    return pair  # type: ignore[return-value]


def trunc_normal_init(std: float = 0.02) -> Callable[[flow.Tensor], flow.Tensor]:
    """Normal(0, std) truncated to ±2 std, filled in place (the vision transformers' init).

    OneFlow 0.9's ``nn.init.trunc_normal_`` clamps a normal sample at *absolute* bounds
    (±2 by default), which for std 0.02 is no truncation at all. This draws from the truncated
    distribution itself, by inverting the normal CDF over the kept probability range.
    """
    low = 0.5 * (1.0 + math.erf(-2.0 / math.sqrt(2.0)))
    high = 1.0 - low

    def init(tensor: flow.Tensor) -> flow.Tensor:
        with flow.no_grad():
            tensor.uniform_(2.0 * low - 1.0, 2.0 * high - 1.0)
            tensor.erfinv_()
            tensor.mul_(std * math.sqrt(2.0))
            return tensor.clamp_(-2.0 * std, 2.0 * std)

    return init


class _PatchProjection(nn.Conv2d):
    """The patch convolution (kernel = stride = patch), parameters placed by the layout.

    It is an ``nn.Conv2d`` so code written for LiBai (``patch_embed.proj.weight``, MAE's and
    MoCo v3's initialisation, ``isinstance(m, nn.Conv2d)`` walks) finds what it expects; its
    ``weight`` ``[dim, C, p, p]`` and ``bias`` are replaced by layout-aware parameters.
    """

    def __init__(self, in_chans: int, embed_dim: int, patch: Tuple[int, int],
                 init_method: Callable[[flow.Tensor], Any], layout: Any, layer_idx: int) -> None:
        super().__init__(in_chans, embed_dim, kernel_size=patch, stride=patch)
        self.weight = make_parameter((embed_dim, in_chans, *patch), init_method, layout, layer_idx)
        self.bias = make_parameter((embed_dim,), nn.init.zeros_, layout, layer_idx)

    def forward(self, images: flow.Tensor) -> flow.Tensor:
        if images.dtype != self.weight.dtype:
            images = images.to(self.weight.dtype)
        return flow.nn.functional.conv2d(images, self.weight, self.bias, stride=self.stride)


class PatchEmbedding(nn.Module):
    """Cut an image into non-overlapping ``patch × patch`` squares and project each to a vector.

    A convolution with kernel = stride = patch size, ``proj`` (LiBai's name, so its parameters
    are ``proj.weight`` ``[dim, C, p, p]`` and ``proj.bias`` as in LiBai's checkpoints and
    pretrained ViT/Swin patch projections): ``[B, C, H, W] -> [B, H/p · W/p, dim]``, patches
    in row-major order. The weight is replicated over tensor-parallel ranks; the batch stays
    split over data-parallel ranks. ``norm`` is the LayerNorm over each patch vector, or
    ``nn.Identity`` when there is none (as in LiBai).

    Args:
        img_size, patch_size: ints or ``(height, width)``; the image must divide into patches.
        in_chans, embed_dim: input channels and output width.
        norm_layer: LiBai's spelling of a norm: a class called as ``norm_layer(embed_dim)``
            (e.g. ``libai.layers.LayerNorm``), or None.
        flatten: return ``[B, patches, dim]`` (True) or keep the map ``[B, dim, gh, gw]``.
        norm: add a LayerNorm over each patch vector (Swin does, ViT does not).
        init_method: fills the full conv weight in place.
        layer_idx: pipeline position (the first layer, ``0``).
    """

    def __init__(
        self,
        img_size: Size2 = 224,
        patch_size: Size2 = 16,
        in_chans: int = 3,
        embed_dim: int = 768,
        norm_layer: Optional[Callable[..., nn.Module]] = None,
        flatten: bool = True,
        *,
        norm: bool = False,
        init_method: Callable[[flow.Tensor], Any] = trunc_normal_init(),
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        self.img_size = to_2tuple(img_size, "img_size")
        self.patch_size = to_2tuple(patch_size, "patch_size")
        for axis, (size, patch) in enumerate(zip(self.img_size, self.patch_size)):
            if patch < 1 or size % patch:
                raise ValueError(
                    f"img_size {self.img_size} does not divide into patches of {self.patch_size} "
                    f"({'height' if axis == 0 else 'width'} {size} % {patch} != 0); pick a "
                    "patch_size that divides the image size"
                )
        self.grid_size = (
            self.img_size[0] // self.patch_size[0], self.img_size[1] // self.patch_size[1]
        )
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.in_chans = in_chans
        self.embed_dim = embed_dim
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.proj = _PatchProjection(in_chans, embed_dim, self.patch_size, init_method,
                                     self.layout, layer_idx)
        self.flatten = flatten
        if norm_layer is not None and norm:
            raise ValueError("give PatchEmbedding either norm=True or norm_layer=..., not both")
        if norm_layer is not None:
            self.norm = norm_layer(embed_dim, layer_idx=layer_idx) if _takes_layer_idx(
                norm_layer) else norm_layer(embed_dim)
        else:
            self.norm = LayerNorm(embed_dim, layer_idx=layer_idx) if norm else nn.Identity()

    def forward(self, images: flow.Tensor) -> flow.Tensor:
        if images.ndim != 4 or tuple(images.shape[1:]) != (self.in_chans, *self.img_size):
            raise ValueError(
                f"expected images of shape [batch, {self.in_chans}, {self.img_size[0]}, "
                f"{self.img_size[1]}], got {tuple(images.shape)}; resize the images in the "
                "data transforms or set the model's img_size / in_chans to match"
            )
        images = to_sbp(images, self.layout, self.layer_idx, tensor_sbp=broadcast())
        x = self.proj(images)
        if not self.flatten:
            if isinstance(self.norm, nn.Identity):
                return x
            return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        x = x.flatten(2).transpose(1, 2)  # [B, dim, gh, gw] -> [B, gh*gw, dim]
        return self.norm(x)

    def extra_repr(self) -> str:
        return (f"img_size={self.img_size}, patch_size={self.patch_size}, "
                f"in_chans={self.in_chans}, embed_dim={self.embed_dim}, "
                f"layer_idx={self.layer_idx}")


def _takes_layer_idx(factory: Callable[..., Any]) -> bool:
    try:
        return "layer_idx" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
