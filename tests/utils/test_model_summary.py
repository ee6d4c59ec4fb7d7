"""The model summary table: parameter counts against independent sums, output shapes from
forward hooks that leave no trace, and the depth limit."""
from collections import OrderedDict

import oneflow as flow
import pytest
from oneflow import nn

from libai.utils.model_summary import describe_shape, record_output_shapes, summarize_model


class TiedNet(nn.Module):
    """An embedding whose weight the output layer shares, a frozen layer and a nested block."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.block = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 6, bias=False))
        self.frozen = nn.Linear(6, 6)
        for p in self.frozen.parameters():
            p.requires_grad = False
        self.head = nn.Linear(6, 10, bias=False)
        self.head.weight = self.embed.weight  # tied

    def forward(self, ids):
        h = self.block(self.embed(ids))
        h = self.frozen(h)
        return {"logits": self.head(h), "hidden": (h, h.sum())}


def test_totals_count_each_shared_parameter_once():
    model = TiedNet()
    unique = {id(p): p for p in model.parameters()}
    # Written out by hand: embedding 10*6, block 6*5+5 + 5*6, frozen 6*6+6; head shares embed.
    assert sum(p.numel() for p in unique.values()) == 60 + 35 + 30 + 42
    summary = summarize_model(model)
    assert summary.total_params == 167
    assert summary.trainable_params == 167 - 42
    assert summary.non_trainable_params == 42
    rows = {row.name: row for row in summary.rows}
    assert rows[""].num_params == 167 and rows[""].type == "TiedNet" and rows[""].depth == 0
    assert rows["block"].num_params == 65
    assert rows["block.0"].num_params == 35 and rows["block.0"].depth == 2
    assert rows["block.1"].num_params == 0
    assert rows["head"].num_params == 60  # the tied weight counts in each module that holds it
    text = summary.format()
    assert "Total parameters: 167" in text
    assert "Trainable parameters: 125" in text
    assert "Non-trainable parameters: 42" in text


def test_max_depth_hides_rows_but_not_parameters():
    model = TiedNet()
    summary = summarize_model(model, max_depth=1)
    assert [row.name for row in summary.rows] == ["", "embed", "block", "frozen", "head"]
    assert summary.hidden_rows == 3
    assert summary.total_params == 167
    assert "3 deeper modules are not listed" in summary.format()
    with pytest.raises(ValueError, match="max_depth must be >= 0"):
        summarize_model(model, max_depth=-1)


def test_output_shapes_are_recorded_once_and_the_hooks_removed():
    model = TiedNet()
    other_calls = []

    def other(module, inputs, output):
        other_calls.append(1)

    model.block.register_forward_hook(other)  # a user's hook must survive ours
    ids = flow.tensor([[1, 2, 3], [4, 5, 6]], dtype=flow.long)
    with record_output_shapes(model) as shapes:
        out = model(ids)
        model(ids[:1])  # a second call does not overwrite the first shapes
    assert shapes["embed"] == "[2, 3, 6]"
    assert shapes["block.0"] == "[2, 3, 5]"
    assert shapes["head"] == "[2, 3, 10]"
    assert shapes[""] == "{logits: [2, 3, 10], hidden: ([2, 3, 6], [])}"
    assert all(len(m._forward_hooks) == 0 for m in model.modules() if m is not model.block)
    assert list(model.block._forward_hooks.values()) == [other]
    assert list(model.block._forward_hooks.keys()) == [0]
    # Recording did not change the outputs.
    assert flow.equal(out["logits"], model(ids)["logits"])
    summary = summarize_model(model, shapes)
    assert {row.name: row.output_shape for row in summary.rows}["block.2"] == "[2, 3, 6]"


def test_describe_shape_of_containers():
    assert describe_shape(flow.zeros(2, 3)) == "[2, 3]"
    assert describe_shape(OrderedDict(a=flow.zeros(1), b=[flow.zeros(2, 2), None])) == "{a: [1], b: ([2, 2], None)}"
    assert describe_shape(3.0) == "float"


def test_global_model_counts_the_whole_tensors():
    model = TiedNet().to_global(placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.broadcast)
    assert next(model.parameters()).is_global
    assert summarize_model(model).total_params == 167
