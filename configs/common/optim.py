"""Default optimizer: ``from configs.common.optim import optim``.

AdamW over the model's parameters, grouped by ``libai.optim.get_default_optimizer_params``
(weight decay off for norms and biases, gradient clipping). The trainer fills ``params.model``.
"""
import libai  # noqa: F401  (must precede oneflow: makes its CUDA libraries loadable)
import oneflow as flow

from libai.config import LazyCall

optim = LazyCall(flow.optim.AdamW)(
    params=LazyCall("libai.optim.get_default_optimizer_params")(
        # model is filled in by the trainer
        clip_grad_max_norm=1.0,  # clip the global gradient norm to this value
        clip_grad_norm_type=2.0,  # the p of that norm
        weight_decay_norm=0.0,  # no decay on normalization weights
        weight_decay_bias=0.0,  # no decay on biases
    ),
    lr=1e-4,
    weight_decay=0.01,
    betas=(0.9, 0.999),
    eps=1e-8,
    do_bias_correction=True,
)
