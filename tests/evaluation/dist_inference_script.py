"""Run by test_inference.py under `oneflow.distributed.launch` with 2 processes.

Two data-parallel ranks; each loader yields its rank's share of global batches of 6 samples
out of 10, the last global batch padded at its end ([6, 7, 8, 9, 6, 7]). Every rank prints the
sample ids its evaluator saw and the top-1 accuracy.
"""
import os
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import libai  # noqa: E402,F401  (before oneflow)
import numpy as np  # noqa: E402
import oneflow as flow  # noqa: E402

from libai.data.structures import DistTensorData, Instance  # noqa: E402
from libai.evaluation import ClsEvaluator, DatasetEvaluator, inference_on_dataset  # noqa: E402
from libai.utils import distributed as dist  # noqa: E402

NUM_SAMPLES, NUM_CLASSES, GLOBAL_BATCH = 10, 4, 6
RNG = np.random.RandomState(0)
SCORES = RNG.randn(NUM_SAMPLES, NUM_CLASSES).astype(np.float32)
LABELS = SCORES.argmax(axis=1)
LABELS[[1, 8, 9]] = (LABELS[[1, 8, 9]] + 1) % NUM_CLASSES


class RankLoader:
    def __init__(self, rank, world):
        self.dataset = list(range(NUM_SAMPLES))
        self.rank, self.world = rank, world

    def __iter__(self):
        per_rank = GLOBAL_BATCH // self.world
        for start in range(0, NUM_SAMPLES, GLOBAL_BATCH):
            ids = list(range(start, min(start + GLOBAL_BATCH, NUM_SAMPLES)))
            ids += ids[: GLOBAL_BATCH - len(ids)]
            mine = np.array(ids[self.rank * per_rank:(self.rank + 1) * per_rank])
            yield Instance(
                x=DistTensorData(flow.tensor(SCORES[mine])),
                ids=DistTensorData(flow.tensor(mine)),
                labels=DistTensorData(flow.tensor(LABELS[mine])),
            )


class Model(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = flow.nn.Parameter(flow.ones(1))

    def forward(self, x, ids, labels):
        assert x.is_global
        return {"prediction_scores": x * self.scale}


class IdRecorder(DatasetEvaluator):
    def reset(self):
        self.ids = []

    def process(self, inputs, outputs):
        assert not inputs["ids"].is_global and not outputs["prediction_scores"].is_global
        self.ids.extend(inputs["ids"].numpy().tolist())

    def evaluate(self):
        return OrderedDict()


def main():
    layout = dist.ParallelLayout.from_config({"device_type": "cpu"})
    with layout:
        model = dist.convert_to_distributed_default_setting(Model())
    recorder = IdRecorder()
    results = inference_on_dataset(
        model, RankLoader(layout.rank, layout.world_size), [recorder, ClsEvaluator((1,))],
        layout=layout,
    )
    print(f"RESULT rank={layout.rank} ids={sorted(recorder.ids)} acc1={results['Acc@1']:.4f}",
          flush=True)


if __name__ == "__main__":
    main()
