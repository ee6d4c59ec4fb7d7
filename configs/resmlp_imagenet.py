"""ResMLP-12 on ImageNet-1k from class-per-folder trees (LAMB, MixUp/CutMix, 400 epochs).

    python -m oneflow.distributed.launch --nproc_per_node 8 tools/train_net.py \\
        --config-file configs/resmlp_imagenet.py

ResMLP-24/36 and ResMLP-B24: ``resmlp_24()``, ``resmlp_36()``, ``resmlpB_24()`` in
configs/common/models/resmlp.py. Tensor and pipeline parallel work too
(``train.dist.tensor_parallel_size=2``, ``train.dist.pipeline_parallel_size=2``).
"""
import oneflow as flow

from .common.data.imagenet import dataloader, deit_mixup
from .common.models.graph import graph
from .common.models.resmlp import resmlp_12
from .common.optim import optim
from .common.train import train

model = resmlp_12()

# Placeholders: lay ImageNet out as in docs/prepare_image_data.md.
dataloader.train.dataset[0].root = "./data/imagenet/train"
dataloader.test[0].dataset.root = "./data/imagenet/val"
dataloader.train.mixup_func = deit_mixup(model.num_classes)
dataloader.test[0].dataset.transform.crop_pct = 0.9  # resize to 224 / 0.9, centre-crop 224

optim._target_ = flow.optim.LAMB
optim.lr = 5e-3  # for a global batch of 2048 (8 ranks × 256)
optim.eps = 1e-8
optim.weight_decay = 0.2
optim.params.clip_grad_max_norm = None
optim.params.clip_grad_norm_type = None
# no weight decay on the Affine scale/shift and the LayerScale factors (LiBai's names)
optim.params.overrides = {name: {"weight_decay": 0.0} for name in ("alpha", "beta", "gamma_1", "gamma_2")}

train.update(
    dict(
        output_dir="./output/resmlp_imagenet",
        train_micro_batch_size=256,
        test_micro_batch_size=64,
        train_iter=0,
        train_epoch=400,
        warmup_ratio=5 / 400,
        log_period=20,
    )
)
train.evaluation.eval_period = 1000
train.scheduler.update(warmup_factor=0.001, alpha=0.01, warmup_method="linear")
train.amp.enabled = True  # float16 on CUDA; the CPU runs float32
train.dist.pipeline_num_layers = model.depth
