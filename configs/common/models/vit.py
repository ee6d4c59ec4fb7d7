"""Vision Transformer config: ``from configs.common.models.vit import model``.

The defaults are a small ViT for 32×32 images (CIFAR) that trains on a CPU: 8×8 patches of 4
pixels, 6 blocks of width 192. ViT-B/16 on ImageNet is img_size=224, patch_size=16,
embed_dim=768, depth=12, num_heads=12, num_classes=1000 (ViT-S/16: 384 / 12 / 6; ViT-L/16:
1024 / 24 / 16). ``num_heads`` must be divisible by ``train.dist.tensor_parallel_size``.
A pipelined run sets ``train.dist.pipeline_num_layers = model.depth``.
The default loss takes hard labels and the soft targets of MixUp/CutMix.
"""
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
