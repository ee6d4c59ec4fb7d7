"""In one process, what LiBai code touches is global: the batch a step receives, the parameters
and the activations answer ``.sbp`` and ``.placement``, and LiBai idioms built on them
(``x.to_global(sbp=batch.sbp)``, a buffer made with ``get_nd_sbp``/``get_layer_placement``) run,
in Eager and in Graph mode."""
import math

import oneflow as flow
import pytest
from oneflow import nn

from libai.config import LazyCall
from libai.engine import DefaultTrainer
from libai.layers import Linear
from libai.utils import distributed as dist

from toy import toy_cfg

B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
SEEN = {}


class ReadsSbpModel(nn.Module):
    """Written the way LiBai projects write models: a buffer placed with LiBai's helpers, the
    input's SBP read and reused, a libai layer next to a plain oneflow one."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("offset", flow.zeros(
            1, 4, sbp=dist.get_nd_sbp([B, B]), placement=dist.get_layer_placement(0)))
        self.hidden = Linear(4, 8, parallel="col", layer_idx=0)
        self.head = nn.Linear(8, 2)  # a plain module: the trainer places it
        self.loss_func = nn.CrossEntropyLoss()

    def forward(self, inputs, labels=None):
        shift = self.offset.expand_as(inputs).to_global(sbp=inputs.sbp)  # Couplets' idiom
        h = self.hidden(inputs + shift)
        SEEN.setdefault("inputs", (tuple(inputs.sbp), inputs.placement))
        SEEN.setdefault("activation", (tuple(h.sbp), h.placement))
        SEEN.setdefault("weight", (tuple(self.hidden.weight.sbp), self.hidden.weight.placement))
        SEEN.setdefault("head_weight", (tuple(self.head.weight.sbp), self.head.weight.placement))
        logits = self.head(flow.relu(h))
        if labels is not None:
            SEEN.setdefault("labels", (tuple(labels.sbp), labels.placement))
            return {"losses": self.loss_func(logits, labels)}
        return {"prediction_scores": logits}


class SbpReadingTrainer(DefaultTrainer):
    """LiBai user code: a ``get_batch`` override that reads the placed batch."""

    @staticmethod
    def get_batch(data, input_placement_device="cuda", mixup_func=None):
        batch = DefaultTrainer.get_batch(data, input_placement_device, mixup_func)
        SEEN.setdefault("batch", {k: (tuple(v.sbp), v.placement) for k, v in batch.items()})
        return batch


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_batch_parameters_and_activations_are_global_in_one_process(tmp_path, graph):
    SEEN.clear()
    cfg = toy_cfg(str(tmp_path), model=LazyCall(ReadsSbpModel)(), train_iter=2,
                  evaluation=dict(enabled=False), checkpointer=dict(period=100))
    cfg.graph.enabled = graph
    trainer = SbpReadingTrainer(cfg)
    trainer.train()
    one_rank = flow.placement("cpu", ranks=[[0]])
    assert trainer.layout.world_size == 1 and trainer.layout.is_global
    assert SEEN["batch"] == {"inputs": ((S0, B), one_rank), "labels": ((S0, B), one_rank)}
    assert SEEN["inputs"] == ((S0, B), one_rank)
    assert SEEN["labels"] == ((S0, B), one_rank)
    assert SEEN["activation"] == ((S0, flow.sbp.split(1)), one_rank)  # column-parallel output
    assert SEEN["weight"] == ((B, S0), one_rank)  # split over the (one-rank) tensor axis
    assert SEEN["head_weight"] == ((B, B), one_rank)  # placed by build_model
    assert all(p.is_global for p in trainer.model.parameters())
    assert math.isfinite(float(trainer.storage.history("total_loss").latest()))
