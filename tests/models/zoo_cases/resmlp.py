"""ResMLP in the parity suite: a 2-block ResMLP on 8×8 images (16 patches of 2×2), hard labels.

Channel MLPs are column/row-parallel under TP, blocks split over stages under PP
(``num_layers`` = depth); the cross-patch layers and Affines are replicated.
"""
from libai.models import ResMLP

BATCH, CLASSES, DEPTH = 4, 5, 2


def resmlp_case(rng):
    images = rng.randn(BATCH, 3, 8, 8).astype("float32")
    labels = rng.randint(0, CLASSES, size=(BATCH,))
    model = lambda: ResMLP(img_size=8, patch_size=2, embed_dim=16, depth=DEPTH, init_scale=0.5,
                           num_classes=CLASSES)
    return model, DEPTH, {"images": (images, 0), "labels": (labels, -1)}


CASES = {"resmlp": resmlp_case}
