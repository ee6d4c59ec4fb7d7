"""A YAML-only, registry-style config trains through tools/train_net.py: the model and dataset
are named, the model's two weighted losses are logged one by one in metrics.json with the
values numpy computes independently, and model.ema becomes the run's train.ema."""
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The user's module: a model and a dataset registered by decorator (imported through the
# config's custom_imports). The model's weights are fixed numbers and the optimizer's lr is 0,
# so every step sees the same loss, which numpy can compute from the same numbers.
TOY_MODULE = '''
import numpy as np
import oneflow as flow
from oneflow import nn

from libai.config import DATASET_REGISTRY, MODEL_REGISTRY
from libai.data.structures import DistTensorData, Instance

IN, CLASSES = 4, 3
WEIGHT = (np.arange(IN * CLASSES, dtype=np.float32).reshape(CLASSES, IN) - 5.0) / 10.0
BIAS = np.array([0.1, -0.2, 0.3], dtype=np.float32)
SAMPLE = np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32)
LABEL = 2


@MODEL_REGISTRY.register()
class ToyTwoLossNet(nn.Module):
    def __init__(self, loss, in_features=IN, num_classes=CLASSES):
        super().__init__()
        self.fc = nn.Linear(in_features, num_classes)
        with flow.no_grad():
            self.fc.weight.copy_(flow.tensor(WEIGHT))
            self.fc.bias.copy_(flow.tensor(BIAS))
        self.num_classes = num_classes
        self.loss = loss

    def forward(self, images, labels=None):
        logits = self.fc(images)
        if labels is None or not self.training:
            return {"prediction_scores": logits}
        onehot = flow.nn.functional.one_hot(labels, self.num_classes).to(flow.float32)
        return self.loss(dict(pred=logits, target=labels, prob=flow.softmax(logits, dim=-1), onehot=onehot))


@DATASET_REGISTRY.register()
class ToyConstantDataset:
    def __init__(self, num_samples=16):
        self.num_samples = num_samples

    def __len__(self):
        return self.num_samples

    def __getitem__(self, index):
        return Instance(
            images=DistTensorData(flow.tensor(SAMPLE)),
            labels=DistTensorData(flow.tensor(LABEL, dtype=flow.long), placement_idx=-1),
        )
'''

CONFIG = """
custom_imports: [regtoy]
model:
  name: ToyTwoLossNet
  loss:
    loss1:
      - name: CrossEntropyLoss
        param: {lambda_weight: 10.0}
    loss2:
      - name: L1Loss
        param: {lambda_weight: 2.5}
        input_name: [prob, onehot]
  ema: {enable: true, decay_rate: 0.995}
dataloader:
  train:
    _target_: libai.data.build_image_train_loader
    dataset:
      - name: ToyConstantDataset
        num_samples: 16
    num_workers: 0
optim:
  name: SGD
  params: {_target_: libai.optim.get_default_optimizer_params}
  lr: 0.0
train:
  output_dir: OUTPUT
  train_micro_batch_size: 4
  train_iter: 3
  log_period: 1
  checkpointer: {period: 3}
  evaluation: {enabled: false}
  model_summary: {enabled: false}
graph:
  enabled: false
"""


def _expected_losses():
    """loss1 = 10 * cross entropy(logits, label); loss2 = 2.5 * mean |softmax - onehot|."""
    weight = (np.arange(12, dtype=np.float64).reshape(3, 4) - 5.0) / 10.0
    bias = np.array([0.1, -0.2, 0.3])
    logits = weight @ np.array([0.5, -1.0, 2.0, 0.25]) + bias
    prob = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    onehot = np.eye(3)[2]
    return 10.0 * -np.log(prob[2]), 2.5 * np.abs(prob - onehot).mean()


def _tensorboard_scalars(folder):
    """{tag: {step: value}} of the run's TensorBoard event file (TFRecord framing)."""
    from tensorboardX.proto import event_pb2

    files = [f for f in os.listdir(folder) if f.startswith("events.out.tfevents")]
    assert len(files) == 1, files
    data = open(os.path.join(folder, files[0]), "rb").read()
    scalars, pos = {}, 0
    while pos < len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
        pos += 16 + length
        for value in event.summary.value:
            scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    return scalars


@pytest.mark.parametrize("graph", ["false", "true"])
def test_yaml_registry_config_trains_and_logs_each_weighted_loss(tmp_path, graph):
    (tmp_path / "regtoy.py").write_text(textwrap.dedent(TOY_MODULE))
    out = tmp_path / "out"
    config = tmp_path / "train.yaml"
    config.write_text(CONFIG.replace("OUTPUT", str(out)))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "train_net.py"), "--config-file", str(config),
         f"graph.enabled={graph}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    with open(out / "metrics.json") as f:
        records = [json.loads(line) for line in f if line.strip()]
    steps = [r for r in records if "loss1" in r]
    assert [r["iteration"] for r in steps] == [0, 1, 2]
    loss1, loss2 = _expected_losses()
    for record in steps:
        assert abs(record["loss1"] - loss1) < 1e-4 * loss1, record
        assert abs(record["loss2"] - loss2) < 1e-4 * loss2, record
        assert abs(record["total_loss"] - (loss1 + loss2)) < 1e-4 * (loss1 + loss2), record

    board = _tensorboard_scalars(out)
    for tag, expected in (("loss1", loss1), ("loss2", loss2)):
        assert sorted(board[tag]) == [0, 1, 2], board.keys()
        assert all(abs(v - expected) < 1e-4 * expected for v in board[tag].values()), board[tag]

    board = _tensorboard_scalars(out)
    for tag, expected in (("loss1", loss1), ("loss2", loss2)):
        assert sorted(board[tag]) == [0, 1, 2], sorted(board)
        assert all(abs(v - expected) < 1e-4 * expected for v in board[tag].values()), board[tag]

    assert (out / "model_final").is_dir() or (out / "model_0000002").is_dir(), os.listdir(out)
    with open(out / "last_checkpoint") as f:
        assert f.read().strip() in ("model_final", "model_0000002")

    # model.ema became the run's EMA setting; the model node no longer carries it
    with open(out / "config.yaml") as f:
        saved = yaml.safe_load(f)
    assert saved["graph"]["enabled"] is (graph == "true")
    assert "ema" not in saved["model"]
    assert saved["train"]["ema"]["enable"] is True
    assert saved["train"]["ema"]["decay_rate"] == 0.995
