"""The per-module FLOP counter and the shape pass: single modules against hand-computed counts,
whole models against published ones, a user's unknown modules listed, unknown FLOPs planned as
no time at all, and the planner's assertion against a throughput physics rules out."""
import os

import oneflow as flow
import pytest
from oneflow import nn

import libai
from libai.config import LazyCall, LazyConfig
from libai.plan.costs import layer_costs
from libai.plan.hardware import device_preset
from libai.plan.module_costs import leaf_cost
from libai.plan.timing import forward_flops_per_sample, time_plan
from libai.plan.trace import trace_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MNIST = os.path.join(REPO, "projects", "MNIST", "configs", "config.py")


def _call(module, x):
    with flow.no_grad():
        return leaf_cost(module, (x,), module(x))


def test_convolution_with_groups_stride_and_dilation():
    """Output 16 × 16 × 16 (stride 2), each output one multiply-add per weight of its channel:
    (8 / 4 groups) × 3 × 3 = 18; 2 FLOPs per multiply-add, plus one add per output for the bias."""
    conv = nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=4)
    cost = _call(conv, flow.zeros(1, 8, 32, 32))
    assert cost.flops == 2 * (16 * 16 * 16) * 18 + 16 * 16 * 16
    dilated = nn.Conv2d(4, 6, 3, dilation=2, bias=False)  # 20 - 2·2 = 16 per side
    assert _call(dilated, flow.zeros(1, 4, 20, 20)).flops == 2 * (6 * 16 * 16) * (4 * 9)
    assert _call(dilated, flow.zeros(1, 4, 20, 20)).keep[0].shape == (1, 4, 20, 20)  # its input


def test_linear_pooling_and_norm():
    lin = nn.Linear(64, 32)
    assert _call(lin, flow.zeros(2, 5, 64)).flops == 2 * 10 * 64 * 32 + 10 * 32
    pool = nn.MaxPool2d(3, stride=2)  # 15×15 -> 7×7, 9 reads per output, int64 indices kept
    cost = _call(pool, flow.zeros(1, 4, 15, 15))
    assert cost.flops == 4 * 7 * 7 * 9 and cost.kept_1 == 8 * 4 * 7 * 7
    assert _call(nn.AdaptiveAvgPool2d(1), flow.zeros(1, 4, 6, 6)).keep == []


class _TinyAttention(nn.Module):
    """q·kᵀ, softmax and p·v written in the module's own code, as Swin's window attention."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = flow.chunk(self.qkv(x).view(b, n, 3 * self.heads, c // self.heads).permute(0, 2, 1, 3), 3, dim=1)
        probs = flow.softmax(flow.matmul(q, k, transpose_b=True), dim=-1)
        return flow.matmul(probs, v)


def test_attention_products_made_in_a_modules_own_code():
    """n = 10 tokens, 2 heads of 8: q·kᵀ and p·v are 2 × heads × n × n × 8 FLOPs each, the
    softmax 5 per score, the projection 2 × n × 16 × 48 + the bias."""
    trace = trace_model(_TinyAttention(), {"x": flow.zeros(1, 10, 16)}, [], [])
    by_name = {m.name: m for m in trace.modules}
    assert by_name["qkv"].flops == 2 * 10 * 16 * 48 + 10 * 48
    pairs = 2 * 10 * 10
    assert trace.modules and not trace.uncounted
    own = [m for m in trace.modules if m.name != "qkv"]
    assert sum(m.flops for m in own) == 2 * (2 * pairs * 8) + 5 * pairs


class MyGate(nn.Module):
    """A user's module no rule knows: a learned 60 × 100 gate table."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.table = nn.Parameter(flow.zeros(60, 100))
        self.width = width

    def forward(self, x):
        return x * self.table[0, : self.width].sigmoid()


class GatedNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(784, 16)
        self.gate1, self.gate2 = MyGate(16), MyGate(16)
        self.out = nn.Linear(16, 10)
        self.spare = nn.Linear(4, 4)  # never run by forward: not counted either

    def forward(self, inputs, labels=None):
        logits = self.out(self.gate2(self.gate1(self.fc(inputs.flatten(1)))))
        return {"losses": logits.sum()} if labels is not None else {"prediction_scores": logits}


def test_unknown_modules_are_listed_and_unknown_flops_get_no_time_plan():
    cfg = LazyConfig.load(MNIST)
    cfg.model = LazyCall(GatedNet)()
    plan = libai.plan(cfg, check_data=False)
    text = "\n".join(map(str, plan.problems))
    assert "not counted: 2 modules of class MyGate, 12k parameters; 1 module of class Linear, 20 parameters" in text
    assert plan.time is None and "no time plan" in text  # 12k uncounted weights > the FLOPs counted
    assert "time per step: not planned" in plan.format()


def test_a_throughput_beyond_the_peak_names_what_was_not_counted():
    plan = libai.plan(LazyConfig.load(MNIST), check_data=False)
    costs = layer_costs(plan.model, len(plan.costs))
    for c in costs:
        c.flops_sample = 0.0  # a counter that lost every module
    with pytest.raises(AssertionError, match="not counted.*MyGate"):
        time_plan(costs, plan.run, device_preset("a100"), "2 modules of class MyGate, 12k parameters",
                  min_flops_per_sample=2.0 * plan.model.num_params)


def _forward_flops(path, overrides=()):
    plan = libai.plan(LazyConfig.load(os.path.join(REPO, path)), check_data=False, overrides=list(overrides))
    assert plan.time is not None and not (plan.model.trace and plan.model.trace.uncounted), plan.format()
    return forward_flops_per_sample(plan.costs, plan.run.seq)


@pytest.mark.parametrize("path, reference", [
    # torchvision's model cards (ResNet50_Weights.IMAGENET1K_V1: 4.09, AlexNet_Weights: 0.71,
    # ViT_B_16_Weights: 17.56 "GFLOPS"), which count multiply-adds of the convolutions, linear
    # layers and attention at 224²; the plan counts FLOPs = 2 per multiply-add, plus norms,
    # activations and pooling (under 2%)
    ("configs/resnet50_imagenet.py", 2 * 4.09e9),
    ("configs/alexnet_imagenet_ofrecord.py", 2 * 0.71e9),
    ("configs/vit_imagenet.py", 2 * 17.56e9),
    # Liu et al. 2021 (Swin Transformer), Table 1: Swin-T at 224², "4.5G FLOPs" (multiply-adds)
    ("configs/swin_imagenet.py", 2 * 4.5e9),
    # hand-derived: 784·256 + 256·128 + 128·10 = 234,752 multiply-adds = 469,504 FLOPs
    ("projects/MNIST/configs/config.py", 2 * (784 * 256 + 256 * 128 + 128 * 10)),
])
def test_whole_models_match_published_forward_counts(path, reference):
    assert _forward_flops(path) == pytest.approx(reference, rel=0.05)
