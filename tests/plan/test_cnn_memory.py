"""The plan's memory for a small CNN of the user's own (conv, BatchNorm, ReLU, max pool, linear)
against what OneFlow really holds on the CPU: the tensors one forward keeps for backward, and the
steady footprint of a few AdamW steps (``docs/preflight.md``, "Planned vs measured").

Measured in a fresh child process (OneFlow's allocator keeps every block it has taken, so only a
fresh process's resident set means anything): the kept tensors as the growth of the resident set
per forward while the outputs of repeated forwards are held (each call's tensors stay alive, so
the allocator's cache cannot hide them); the footprint as the peak resident set (``VmHWM``, reset
through ``/proc/self/clear_refs`` before the model is built) after the steps, as
``benchmarks/plan_vs_measured.py`` measures the zoo. Every tensor is 4 MiB or more, so the
allocator's 20 MiB blocks shared by small tensors do not blur the figures."""
import json
import os
import subprocess
import sys

import oneflow as flow
from oneflow import nn

import libai
from libai.config import LazyCall, LazyConfig

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MNIST = os.path.join(REPO, "projects", "MNIST", "configs", "config.py")
BATCH = 64


class TinyCNN(nn.Module):
    """conv 3→16 (3×3) → BatchNorm → ReLU → 2×2 max pool → linear to 10 classes, its own loss."""

    def __init__(self, img_size: int = 64) -> None:
        super().__init__()
        self.img_size = img_size
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.MaxPool2d(2))
        self.head = nn.Linear(16 * (img_size // 2) ** 2, 10)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, images, labels=None):
        logits = self.head(self.features(images).flatten(1))
        return {"losses": self.loss(logits, labels)} if labels is not None else {"prediction_scores": logits}


def _plan(graph=False):
    cfg = LazyConfig.load(MNIST)
    cfg.model = LazyCall(TinyCNN)(img_size=64)  # the MNIST project's AdamW: two slots
    return libai.plan(cfg, check_data=False, device="cpu", overrides=[
        f"train.train_micro_batch_size={BATCH}", "train.global_batch_size=None",
        "train.num_accumulation_steps=None", f"graph.enabled={graph}", "train.amp.enabled=False"])


def test_eager_plans_the_pieces_the_states_take_and_a_graph_does_not():
    """libai.plan.memory.displaced_by_states: in Eager mode the allocator term of a model the
    shape pass planned is its gradients + optimizer state (16,384 × 10 + 10 + conv and BN
    weights, fp32, × 3 with AdamW); a graph plans its memory ahead and has none."""
    eager, graph = _plan().memory[0], _plan(graph=True).memory[0]
    params = 4 * (16 * 32 * 32 * 10 + 10 + 16 * 3 * 9 + 16 + 2 * 16)
    assert eager.parameters == eager.gradients == params and eager.optimizer == 2 * params
    assert eager.allocator == 3 * params and graph.allocator == 0


def _kib(name):
    text = open("/proc/self/status").read()
    return int(text.split(f"{name}:")[1].split()[0]) * 1024


def _child(what, out_path):
    """Measure ``what`` ("kept" or "peak") in this fresh process and write it to ``out_path``."""
    sync = flow._oneflow_internal.eager.Sync
    images, labels = flow.randn(BATCH, 3, 64, 64), flow.randint(0, 10, (BATCH,))
    flow.manual_seed(0)
    base = _kib("VmRSS")
    open("/proc/self/clear_refs", "w").write("5")
    model = TinyCNN().train()
    if what == "kept":
        held, rss = [], []
        for _ in range(4):  # each call's kept tensors stay alive with its loss
            held.append(model(images, labels)["losses"])
            sync()
            rss.append(_kib("VmRSS"))
        value = (rss[-1] - rss[0]) / (len(rss) - 1)
    else:
        optimizer = flow.optim.AdamW(model.parameters(), lr=1e-3)
        for _ in range(4):  # the steady footprint: the third step on grows no more
            model(images, labels)["losses"].backward()
            optimizer.step()
            optimizer.zero_grad()
            sync()
        value = _kib("VmHWM") - base
    json.dump(value, open(out_path, "w"))


def _measure(what, tmp_path):
    out = tmp_path / f"{what}.json"
    proc = subprocess.run([sys.executable, __file__, what, str(out)], env=dict(os.environ, PYTHONPATH=REPO),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_small_cnn_memory_matches_the_measured(tmp_path):
    mem = _plan().memory[0]
    kept, peak = _measure("kept", tmp_path), _measure("peak", tmp_path)
    image = BATCH * 3 * 64 * 64 * 4  # the batch: the conv's kept input, allocated once here
    assert abs((mem.activations - image) / kept - 1) < 0.15, (mem.as_dict(), kept)
    assert abs(mem.total / peak - 1) < 0.15, (mem.as_dict(), peak)


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
