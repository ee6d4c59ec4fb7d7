"""Two ranks train the image task with every visual on, data parallel (``dp``: the batch is
split) and tensor parallel (``tp``: weights are split), one after the other in the same processes
(one launch); for each, rank 0 writes what the event file holds and what the full tensors were
(gathered by ``ttol``, another path than the hook's) as JSON in ``OUT_DIR/<mode>/result.json``.

    python -m oneflow.distributed.launch --nproc_per_node 2 visuals_two_ranks_script.py OUT_DIR dp tp
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import libai  # noqa: E402,F401
import oneflow as flow  # noqa: E402
from oneflow import nn  # noqa: E402

from libai.config import LazyCall  # noqa: E402
from libai.engine.default_trainer import DefaultTrainer  # noqa: E402
from libai.engine.trainer import HookBase  # noqa: E402
from libai.layers import Linear  # noqa: E402
from libai.utils import distributed as dist  # noqa: E402
from test_training_visuals import image_cfg, read_events  # noqa: E402


class SplitModel(nn.Module):
    """A column-parallel then a row-parallel layer: both weights are split over the 2 ranks."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = Linear(48, 8, parallel="col")
        self.fc2 = Linear(8, 2, parallel="row")
        self.loss_func = nn.CrossEntropyLoss()

    def forward(self, images, labels=None):
        logits = self.fc2(flow.relu(self.fc1(images.flatten(1))))
        if self.training and labels is not None:
            return {"losses": self.loss_func(logits, labels)}
        return {"prediction_scores": logits}


class FullTensors(HookBase):
    """Every parameter and gradient, whole, on every rank, when the visuals read them."""

    def __init__(self):
        self.seen = {}

    def after_backward(self):
        for name, p in self.trainer.model.named_parameters():
            for kind, t in (("params", p.detach()), ("grads", p.grad)):
                v = dist.ttol(t).numpy().astype("float64")
                self.seen[f"{kind}/{name}@{self.trainer.iter}"] = [int(v.size), float(v.min()), float(v.max()), float(v.sum())]


def run(mode: str, out: str) -> None:
    cfg = image_cfg(out, train_iter=4,
                    tensorboard=dict(lr_period=1, histogram_period=2, image_period=2, max_images=4),
                    live_plots=dict(enabled=True, period=2, weight="fc1.weight" if mode == "tp" else "conv.weight"))
    if mode == "tp":
        cfg.model = LazyCall(SplitModel)()
        cfg.train.dist.tensor_parallel_size = 2
    else:
        cfg.train.dist.data_parallel_size = 2
    trainer = DefaultTrainer(cfg)
    full = FullTensors()
    trainer.register_hooks([full])
    trainer.train()
    split = [name for name, p in trainer.model.named_parameters() if any(s != flow.sbp.broadcast for s in p.sbp)]
    dist.synchronize()
    if dist.is_main_process():
        events = read_events(out)  # exactly one event file: rank 1 wrote none
        hist = {f"{tag}@{step}": [int(v.histo.num), v.histo.min, v.histo.max, v.histo.sum]
                for tag, step, v in events if v.HasField("histo")}
        images = sorted([tag, step, v.image.height, v.image.width] for tag, step, v in events if v.HasField("image"))
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump({"hist": hist, "full": full.seen, "images": images, "split": split,
                       "plots": sorted(os.listdir(os.path.join(out, "plots"))),
                       "summary": open(os.path.join(out, "model-summary.txt")).read()}, f)
    dist.synchronize()


for mode in sys.argv[2:]:
    run(mode, os.path.join(sys.argv[1], mode))
