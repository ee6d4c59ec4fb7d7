"""A tiny dataset and models for engine tests, and a config builder around them."""
import oneflow as flow
from oneflow import nn
from oneflow.utils.data import Dataset
from omegaconf import OmegaConf

from libai.config import LazyCall, get_config
from libai.data import DistTensorData, Instance
from libai.data.build import build_image_test_loader, build_image_train_loader


class ToyDataset(Dataset):
    """``n`` samples of 4 features; the label is whether the feature sum is positive."""

    def __init__(self, n: int = 64, field: str = "inputs", seed: int = 0) -> None:
        g = flow.Generator()
        g.manual_seed(seed)
        self.x = flow.randn(n, 4, generator=g)
        self.y = (self.x.sum(1) > 0).to(flow.long)
        self.field = field

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> Instance:
        return Instance(**{self.field: DistTensorData(self.x[i])},
                        labels=DistTensorData(self.y[i], placement_idx=-1))


class ToyModel(nn.Module):
    def __init__(self, hidden: int = 8) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 2))
        self.loss_func = nn.CrossEntropyLoss()

    def forward(self, inputs, labels=None):
        logits = self.net(inputs)
        if self.training and labels is not None:
            return {"losses": self.loss_func(logits, labels)}
        return {"prediction_scores": logits}


class NoLossModel(ToyModel):
    def forward(self, inputs, labels=None):
        return {"prediction_scores": self.net(inputs)}


def toy_cfg(output_dir: str, model=None, n: int = 64, field: str = "inputs", **train):
    cfg = OmegaConf.create()
    cfg.model = model if model is not None else LazyCall(ToyModel)()
    cfg.train = get_config("common/train.py").train
    cfg.optim = get_config("common/optim.py").optim
    cfg.graph = get_config("common/models/graph.py").graph
    cfg.dataloader = OmegaConf.create()
    cfg.dataloader.train = LazyCall(build_image_train_loader)(
        dataset=[LazyCall(ToyDataset)(n=n, field=field)], num_workers=0)
    cfg.dataloader.test = [LazyCall(build_image_test_loader)(
        dataset=LazyCall(ToyDataset)(n=32, field=field, seed=1), num_workers=0)]
    cfg.optim.lr = 0.05
    cfg.train.update(dict(output_dir=output_dir, train_micro_batch_size=8, test_micro_batch_size=16,
                          train_iter=6, log_period=1, checkpointer=dict(period=3, max_to_keep=5),
                          evaluation=dict(eval_period=3, evaluator=LazyCall("libai.evaluation.ClsEvaluator")(topk=(1,)))))
    cfg.train.update(train)
    return cfg


class BlockModel(nn.Module):
    """Residual blocks (the repeated units activation checkpointing wraps), no dropout."""

    def __init__(self, hidden: int = 16, blocks: int = 2) -> None:
        super().__init__()
        self.inp = nn.Linear(4, hidden)
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) for _ in range(blocks)])
        self.out = nn.Linear(hidden, 2)
        self.loss_func = nn.CrossEntropyLoss()

    def activation_checkpoint_modules(self):
        return list(self.blocks)

    def forward(self, inputs, labels=None):
        h = self.inp(inputs)
        for block in self.blocks:
            h = h + block(h)
        logits = self.out(h)
        if self.training and labels is not None:
            return {"losses": self.loss_func(logits, labels)}
        return {"prediction_scores": logits}


class LossRecorder:
    """A hook factory recording the raw total loss and lr of every iteration."""

    @staticmethod
    def make(store: dict):
        from libai.engine.trainer import HookBase

        class _Rec(HookBase):
            def after_step(self):
                s = self.trainer.storage
                store[self.trainer.iter] = (float(s.history("total_loss").latest()),
                                            float(s.history("lr").latest()))
        return _Rec()


def recorded_trainer(cfg, resume=False):
    """``DefaultTrainer(cfg)`` with a :class:`LossRecorder` after the LR hook, resumed (or not)
    as ``--resume`` does; returns the trainer, not yet trained, and the store the recorder fills."""
    from libai.engine import DefaultTrainer

    trainer = DefaultTrainer(cfg)
    store = {}
    trainer.register_hooks([LossRecorder.make(store)], after="LRScheduler")
    trainer.resume_or_load(resume=resume)
    return trainer, store


class NaNFromModel(ToyModel):
    """ToyModel whose training loss is NaN from its ``nan_from``-th training step on (Eager
    mode: the count is kept in Python), for tests of how a run that breaks ends."""

    def __init__(self, nan_from: int = 2, hidden: int = 8) -> None:
        super().__init__(hidden)
        self.nan_from = nan_from
        self.training_calls = 0

    def forward(self, inputs, labels=None):
        if not (self.training and labels is not None):
            return super().forward(inputs, labels)
        self.training_calls += 1
        logits = self.net(inputs)
        if self.training_calls > self.nan_from:
            logits = logits * float("nan")
        return {"losses": self.loss_func(logits, labels)}
