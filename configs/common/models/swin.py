"""Swin Transformer (V1) config: ``from configs.common.models.swin import model``.

The defaults are a small Swin for 32×32 images (CIFAR) that trains on a CPU: 2-pixel patches
give a 16×16 map, three stages at 16², 8² and 4² tokens with 4×4 windows. Swin-T on ImageNet is
img_size=224, patch_size=4, embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24),
window_size=7, drop_path_rate=0.2 (Swin-S: depths (2, 2, 18, 2), drop_path_rate=0.3; Swin-B:
embed_dim=128, num_heads=(4, 8, 16, 32)). Every head count must be divisible by
``train.dist.tensor_parallel_size`` (Swin-T's 3 heads allow tensor_parallel_size=1 or 3).
A pipelined run sets ``train.dist.pipeline_num_layers = sum(model.depths)``.
"""
from libai.config import LazyCall
from libai.models import SwinTransformer

model = LazyCall(SwinTransformer)(
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
    loss_func=None,  # None = cross entropy on hard labels or soft targets
)
