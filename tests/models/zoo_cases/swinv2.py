"""SwinV2 in the parity suite: two stages of two blocks on 32×32 images, hard labels.

SwinV2 starts its in-block norms at zero gain (each block the identity); the case sets them
to 1 / 0.1 so that every attention parameter (q/v biases, logit scale, position-bias MLP)
gets a gradient to compare. Heads (2, 4) split over TP ranks with their logit scales and
position-bias MLP outputs; blocks split over stages under PP (``num_layers`` = sum(depths)).
"""
import oneflow as flow

from libai.models import SwinTransformerV2

BATCH, CLASSES, DEPTHS = 4, 5, (2, 2)


def _build():
    model = SwinTransformerV2(img_size=32, patch_size=2, embed_dim=16, depths=DEPTHS,
                              num_heads=(2, 4), window_size=4, drop_path_rate=0.0,
                              num_classes=CLASSES, pretrained_window_sizes=(0, 6))
    with flow.no_grad():
        for block in model._blocks():
            for norm in (block.norm1, block.norm2):
                norm.weight.fill_(1.0)
                norm.bias.fill_(0.1)
    return model


def swinv2_case(rng):
    images = rng.randn(BATCH, 3, 32, 32).astype("float32")
    labels = rng.randint(0, CLASSES, size=(BATCH,))
    return _build, sum(DEPTHS), {"images": (images, 0), "labels": (labels, -1)}


CASES = {"swinv2": swinv2_case}
