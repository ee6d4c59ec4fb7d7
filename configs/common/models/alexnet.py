"""AlexNet config: ``from configs.common.models.alexnet import model`` (ImageNet-1k, 224×224).

The one-tower AlexNet of OneFlow's and PyTorch's model zoos (61.1 M parameters with 1000
classes). ``channels``, ``hidden_size`` and ``pool_size`` shrink it; inputs need at least 63×63
pixels. AlexNet is data-parallel: it runs replicated under tensor parallelism and refuses
pipeline parallelism (train.dist.pipeline_parallel_size must stay 1).
"""
from libai.config import LazyCall
from libai.models import AlexNet

model = LazyCall(AlexNet)(
    num_classes=1000,
    in_chans=3,
    dropout=0.5,  # before the first two fully connected layers
    channels=[64, 192, 384, 256, 256],  # widths of the five convolutions
    hidden_size=4096,  # width of the two hidden fully connected layers
    pool_size=6,  # adaptive average pool to pool_size × pool_size before the classifier
    loss_func=None,  # None = cross entropy on hard labels or soft targets
)
