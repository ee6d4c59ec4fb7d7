"""SGD with momentum, the optimizer of the classic CNN recipes: ``from configs.common.sgd import optim``.

Momentum 0.9; weight decay on the weights only (norms and biases are left undecayed); no
gradient clipping. A recipe sets its own ``optim.lr`` and ``optim.weight_decay`` (here the
ResNet values: 0.1 per 256 images, 1e-4). The trainer fills ``params.model``.
"""
import libai  # noqa: F401  (must precede oneflow: makes its CUDA libraries loadable)
import oneflow as flow

from libai.config import LazyCall
from libai.optim import get_default_optimizer_params

optim = LazyCall(flow.optim.SGD)(
    params=LazyCall(get_default_optimizer_params)(
        # model is filled in by the trainer
        weight_decay_norm=0.0,
        weight_decay_bias=0.0,
        clip_grad_max_norm=None,
        clip_grad_norm_type=None,
    ),
    lr=0.1,
    momentum=0.9,
    weight_decay=1e-4,
)
