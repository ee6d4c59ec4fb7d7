"""ResNet and AlexNet in the parity suite, for the layouts they support: data parallel
(``dp2``; batch norm uses the statistics of the global batch, so it must equal one process)
and tensor parallel (``tp2``, run replicated). Pipeline layouts are refused by design."""
from libai.models import AlexNet, ResNet

BATCH, CLASSES = 4, 5


def resnet_case(rng):
    # 16×16 images keep 2×2 maps in the last stage: batch-norm statistics over more than a
    # handful of values, so float rounding is not amplified past the suite's tolerance
    images = rng.randn(BATCH, 3, 16, 16).astype("float32")
    labels = rng.randint(0, CLASSES, size=(BATCH,))
    model = lambda: ResNet(depth=18, width=4, num_classes=CLASSES, small_input=True)
    return model, 1, {"images": (images, 0), "labels": (labels, -1)}


def alexnet_case(rng):
    images = rng.randn(BATCH, 3, 64, 64).astype("float32")
    labels = rng.randint(0, CLASSES, size=(BATCH,))
    model = lambda: AlexNet(num_classes=CLASSES, dropout=0.0, channels=(8, 16, 16, 16, 16),
                            hidden_size=32, pool_size=2)
    return model, 1, {"images": (images, 0), "labels": (labels, -1)}


CASES = {"resnet": resnet_case, "alexnet": alexnet_case}
