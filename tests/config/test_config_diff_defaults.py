"""LazyConfig.diff, merge_with_defaults (partial nested dicts, unknown keys, legacy names) and
check_required_fields."""
import pytest
from omegaconf import DictConfig

from libai.config import (
    ABSENT,
    ConfigKeyError,
    LazyCall,
    LazyConfig,
    check_required_fields,
    format_diff,
    get_config,
    merge_with_defaults,
)


class Evaluator:
    def __init__(self, topk=(1,)):
        self.topk = topk


def test_diff_lists_changed_added_and_removed_keys_with_both_values():
    old = DictConfig({"a": 1, "b": {"c": 2, "d": [1, 2]}, "gone": "x", "flag": 1})
    new = DictConfig({"a": 1, "b": {"c": 3, "d": [1, 5], "e": {"f": 1}}, "flag": True})
    changes = LazyConfig.diff(old, new)
    assert [(c.key, c.old, c.new, c.kind) for c in changes] == [
        ("b.c", 2, 3, "changed"),
        ("b.d[1]", 2, 5, "changed"),
        ("b.e", ABSENT, {"f": 1}, "added"),
        ("gone", "x", ABSENT, "removed"),
        ("flag", 1, True, "changed"),  # 1 == True in Python, but a flag is not a number
    ]
    assert format_diff(changes).splitlines()[0] == "b.c: 2 -> 3"
    assert "gone: removed (was 'x')" in format_diff(changes)
    assert format_diff([]) == "(no changes)"


def test_diff_of_lists_with_new_length_and_targets_by_object_or_path():
    old = DictConfig({"l": [1, 2], "n": LazyCall(Evaluator)(topk=[1])}, flags={"allow_objects": True})
    new = DictConfig(
        {"l": [1, 2, 3], "n": {"_target_": f"{Evaluator.__module__}.Evaluator", "topk": [1]}}
    )
    changes = LazyConfig.diff(old, new)
    assert [(c.key, c.old, c.new) for c in changes] == [("l", [1, 2], [1, 2, 3])]


def test_diff_against_defaults_shows_what_a_user_config_changed():
    defaults = get_config("common/train.py")
    user = get_config("common/train.py")
    user.train.train_iter = 123
    user.train.amp.enabled = True
    keys = {c.key: (c.old, c.new) for c in LazyConfig.diff(defaults, user)}
    assert keys == {"train.train_iter": (10000, 123), "train.amp.enabled": (False, True)}


def test_merge_keeps_every_default_missing_from_a_partial_nested_dict():
    defaults = get_config("common/train.py").train
    user = DictConfig(dict(defaults), flags={"allow_objects": True})
    user.update(dict(evaluation=dict(enabled=True, eval_period=7), train_iter=5))
    assert "evaluator" not in user.evaluation  # update() replaced the whole dict
    merged, unknown = merge_with_defaults(user, defaults, path="train")
    assert unknown == []
    assert merged.evaluation.eval_period == 7 and merged.train_iter == 5
    assert merged.evaluation.eval_iter == int(1e5) and merged.evaluation.eval_metric == "Acc@1"
    assert merged.evaluation.evaluator._target_ == "libai.evaluation.ClsEvaluator"
    assert list(merged.evaluation.evaluator.topk) == [1, 5]
    assert merged.dist.tensor_parallel_size == 1 and merged.seed == 1234
    assert [c.key for c in LazyConfig.diff(defaults, merged)] == ["train_iter", "evaluation.eval_period"]


def test_merge_takes_user_nodes_and_lists_whole():
    defaults = get_config("common/train.py").train
    user = {"scheduler": LazyCall("libai.scheduler.WarmupStepLR")(step_size=3, gamma=0.5)}
    merged, unknown = merge_with_defaults(user, defaults)
    assert dict(merged.scheduler) == {
        "_target_": "libai.scheduler.WarmupStepLR", "step_size": 3, "gamma": 0.5
    }
    assert unknown == []
    empty, _ = merge_with_defaults(None, defaults)
    assert LazyConfig.diff(defaults, empty) == []


def test_unknown_keys_are_kept_and_reported_with_the_nearest_known_key():
    defaults = get_config("common/train.py").train
    user = {
        "train_itr": 5, "amp": {"enabeld": True}, "log_perid": 3, "warmup_factr": 0.1, "zzzz_qqqq": 1
    }
    merged, unknown = merge_with_defaults(user, defaults, path="train")
    found = {u.key: u.suggestion for u in unknown}
    assert found == {
        "train.train_itr": "train.train_iter",
        "train.amp.enabeld": "train.amp.enabled",
        "train.log_perid": "train.log_period",
        "train.warmup_factr": "train.scheduler.warmup_factor",  # a nested (node) name
        "train.zzzz_qqqq": None,
    }
    assert merged.train_itr == 5 and merged.amp.enabeld is True and merged.amp.enabled is False
    by_key = {u.key: u for u in unknown}
    assert by_key["train.train_itr"].message() == (
        "Config key 'train.train_itr' is not a known setting and has no effect. "
        "Did you mean 'train.train_iter'?"
    )
    assert str(by_key["train.zzzz_qqqq"]) == (
        "Config key 'train.zzzz_qqqq' is not a known setting and has no effect."
    )


def test_legacy_libai_names_point_to_their_new_home():
    defaults = get_config("common/train.py").train
    user = {"eval_period": 100, "recompute_grad": {"enabled": True}, "evaluation": {"topk": [1]}}
    _, unknown = merge_with_defaults(user, defaults, path="train")
    found = {u.key: (u.suggestion, u.legacy) for u in unknown}
    assert found == {
        "train.eval_period": ("train.evaluation.eval_period", True),
        "train.recompute_grad": ("train.activation_checkpoint.enabled", True),
        "train.evaluation.topk": ("train.evaluation.evaluator.topk", True),
    }
    message = [u for u in unknown if u.key == "train.eval_period"][0].message()
    assert "old LiBai name" in message and "'train.evaluation.eval_period'" in message


def test_merge_rejects_non_dicts():
    with pytest.raises(Exception, match="expected a dict, got int"):
        merge_with_defaults(3, {"a": 1})


def test_check_required_fields_names_every_missing_field_and_what_it_holds():
    cfg = DictConfig({"model": {"_target_": "x.Y"}, "train": {}, "graph": None})
    with pytest.raises(ConfigKeyError) as info:
        check_required_fields(cfg)
    message = str(info.value)
    assert "optim, dataloader, graph" in message
    assert "from configs.common.optim import optim" in message
    assert "dataloader.train" in message and "configs.common.models.graph" in message
    assert "model:" not in message
    check_required_fields(cfg, fields=("model", "train"))  # present: no error
