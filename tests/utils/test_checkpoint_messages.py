"""LiBai's key-mismatch messages: keys grouped by the module they belong to."""
from libai.utils.checkpoint import get_missing_parameters_message, get_unexpected_parameters_message
from libai.utils.checkpoint_messages import group_keys


def test_keys_are_grouped_by_everything_before_the_last_dot():
    keys = ["enc.0.mlp.weight", "enc.0.mlp.bias", "head.weight", "step"]
    assert group_keys(keys) == {"enc.0.mlp": ["weight", "bias"], "head": ["weight"], "step": []}


def test_missing_message_lists_one_line_per_module():
    msg = get_missing_parameters_message(["enc.0.mlp.weight", "enc.0.mlp.bias", "head.weight", "step"])
    assert msg == (
        "Some model parameters or buffers are not found in the checkpoint:\n"
        "  enc.0.mlp.{weight, bias}\n"
        "  head.weight\n"
        "  step"
    )


def test_unexpected_message_has_its_own_header():
    msg = get_unexpected_parameters_message(["pooler.dense.bias"])
    assert msg == "The checkpoint state_dict contains keys that are not used by the model:\n  pooler.dense.bias"
