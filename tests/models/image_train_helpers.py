"""Train an image classifier a few iterations through DefaultTrainer on synthetic images, in
Eager or Graph mode, recording the loss of every step (shared by the CNN and ResMLP tests)."""
from typing import List, Tuple

from omegaconf import OmegaConf

from libai.config import LazyCall, get_config


def image_train_cfg(output_dir: str, model, image_size: int, iters: int, graph: bool,
                    lr: float = 3e-3):
    """A config training ``model`` on 8 fixed synthetic images of 4 classes, unclipped AdamW."""
    from libai.data.build import build_image_test_loader, build_image_train_loader
    from libai.data.datasets.synthetic import SyntheticImageDataset

    cfg = OmegaConf.create()
    cfg.model = model
    cfg.train = get_config("common/train.py").train
    cfg.optim = get_config("common/optim.py").optim
    cfg.graph = get_config("common/models/graph.py").graph
    cfg.graph.enabled = graph
    data = LazyCall(SyntheticImageDataset)(num_samples=8, image_size=image_size, num_classes=4)
    cfg.dataloader = OmegaConf.create()
    cfg.dataloader.train = LazyCall(build_image_train_loader)(dataset=[data], num_workers=0)
    cfg.dataloader.test = [LazyCall(build_image_test_loader)(dataset=data, num_workers=0)]
    cfg.optim.lr = lr
    # OneFlow's graph clips per parameter group, Eager by the global norm: compare unclipped
    cfg.optim.params.clip_grad_max_norm = cfg.optim.params.clip_grad_norm_type = None
    cfg.train.update(dict(
        output_dir=output_dir, train_micro_batch_size=8, test_micro_batch_size=8,
        train_iter=iters, warmup_ratio=0.0, log_period=1, checkpointer=dict(period=1000),
        evaluation=dict(enabled=False), dist=dict(device_type="cpu"),
    ))
    return cfg


def train_image_model(out_dir, model, image_size: int, iters: int, graph: bool,
                      lr: float = 3e-3) -> Tuple[List[float], dict]:
    """``(loss of each step, final state dict as NumPy)``; checks Graph mode really compiled."""
    from libai.engine import DefaultTrainer
    from libai.engine.trainer import HookBase
    from libai.utils.testing import COMPILED_GRAPH, runner_description

    losses: List[float] = []

    class Record(HookBase):
        def after_step(self):
            losses.append(float(self.trainer.storage.history("total_loss").latest()))

    out = out_dir / ("graph" if graph else "eager")
    trainer = DefaultTrainer(image_train_cfg(str(out), model, image_size, iters, graph, lr))
    trainer.register_hooks([Record()])
    trainer.train()
    assert runner_description(trainer) == (COMPILED_GRAPH if graph else "EagerTrainer")
    state = {k: v.numpy().copy() for k, v in trainer.model.state_dict().items()}
    return losses, state
