"""LazyConfig.apply_overrides: value parsing, strict paths with suggestions, the '+' rule."""
import pytest
from omegaconf import DictConfig, ListConfig

from libai.config import LazyCall, LazyConfig, OverrideError, OverrideKeyError, get_config


@pytest.fixture
def cfg():
    base = get_config("common/train.py")
    base.dataloader = {"test": [{"batch_size": 4}, {"batch_size": 8}]}
    base.model = LazyCall("pkg.Model")(hidden="???")
    return base


@pytest.mark.parametrize(
    "text, expected",
    [
        ("7", 7),
        ("-3", -3),
        ("1e-4", 1e-4),
        ("0.5", 0.5),
        ("True", True),
        ("False", False),
        ("false", False),
        ("None", None),
        ("null", None),
        ("[1, 2]", [1, 2]),
        ("(0.9, 0.99)", [0.9, 0.99]),
        ("{'a': 1, 'b': [2]}", {"a": 1, "b": [2]}),
        ("'quoted text'", "quoted text"),
        ("./output/run 1", "./output/run 1"),
        ("libai.scheduler.WarmupStepLR", "libai.scheduler.WarmupStepLR"),
        ("", ""),
    ],
)
def test_values_are_python_literals_or_strings(cfg, text, expected):
    LazyConfig.apply_overrides(cfg, [f"train.output_dir={text}"])
    value = cfg.train.output_dir
    if isinstance(value, (DictConfig, ListConfig)):
        from omegaconf import OmegaConf

        value = OmegaConf.to_container(value)
    assert value == expected and type(value) is type(expected)


def test_overrides_apply_in_order_to_nested_keys_lists_and_nodes(cfg):
    result = LazyConfig.apply_overrides(
        cfg,
        [
            "train.train_iter=100",
            "train.evaluation.evaluator.topk=(1,)",
            "train.dist.tensor_parallel_size=2",
            "dataloader.test[1].batch_size=16",
            "dataloader.test.0.batch_size=2",
            "model.hidden=64",
            "train.train_iter=200",
            "train.scheduler._target_=libai.scheduler.WarmupStepLR",
        ],
    )
    assert result is cfg
    assert cfg.train.train_iter == 200 and list(cfg.train.evaluation.evaluator.topk) == [1]
    assert cfg.train.dist.tensor_parallel_size == 2
    assert [t.batch_size for t in cfg.dataloader.test] == [2, 16]
    assert cfg.model.hidden == 64  # a '???' value exists and may be filled in
    assert cfg.train.scheduler._target_ == "libai.scheduler.WarmupStepLR"


def test_value_containing_equals_sign(cfg):
    LazyConfig.apply_overrides(cfg, ["train.load_weight=a=b"])
    assert cfg.train.load_weight == "a=b"


def test_unknown_key_is_an_error_with_the_closest_suggestion(cfg):
    with pytest.raises(OverrideError) as info:
        LazyConfig.apply_overrides(cfg, ["train.train_itr=5"])
    message = str(info.value)
    assert "'train.train_itr' does not exist" in message
    assert "Did you mean train.train_iter" in message
    assert "'+train.train_itr=5'" in message
    assert "train_itr" not in cfg.train


def test_a_missing_path_is_also_a_key_error(cfg):
    """Code written for LiBai catches a bad override key as KeyError; ours is one too."""
    for bad in ("train.train_itr=5", "train.evalution.enabled=False"):
        with pytest.raises(KeyError) as info:
            LazyConfig.apply_overrides(cfg, [bad])
        assert isinstance(info.value, OverrideKeyError) and isinstance(info.value, OverrideError)
    with pytest.raises(OverrideKeyError) as info:
        LazyConfig.apply_overrides(cfg, ["train.train_itr=5"])
    assert (info.value.key, info.value.suggestions) == ("train.train_itr", ["train.train_iter"])
    assert str(info.value).startswith("Override 'train.train_itr=5'")  # no KeyError quoting


def test_a_path_through_a_plain_value_says_what_the_value_is(cfg):
    with pytest.raises(
        OverrideKeyError,
        match=r"'train\.output_dir' is a str \('\./output'\), not a dict or list, so it has no "
        r"key 'sub'\. To replace the value itself, write 'train\.output_dir=\.\.\.'",
    ):
        LazyConfig.apply_overrides(cfg, ["train.output_dir.sub=1"])


def test_key_at_the_wrong_depth_suggests_its_real_place(cfg):
    with pytest.raises(OverrideError, match=r"Did you mean train\.evaluation\.eval_period"):
        LazyConfig.apply_overrides(cfg, ["train.eval_period=10"])


def test_unknown_parent_is_an_error_with_a_suggestion(cfg):
    with pytest.raises(OverrideError, match=r"'train\.evalution' is not a dict.*train\.evaluation"):
        LazyConfig.apply_overrides(cfg, ["train.evalution.enabled=False"])


def test_plus_adds_a_new_key_only_under_an_existing_parent(cfg):
    LazyConfig.apply_overrides(cfg, ["+train.new_key=3", "+train.amp.note={'x': 1}"])
    assert cfg.train.new_key == 3 and cfg.train.amp.note.x == 1
    with pytest.raises(OverrideError, match="already exists; drop the '\\+'"):
        LazyConfig.apply_overrides(cfg, ["+train.train_iter=1"])
    with pytest.raises(OverrideError, match="not a dict or list"):
        LazyConfig.apply_overrides(cfg, ["+train.nothere.deep=1"])


def test_list_index_out_of_range_and_non_numeric_index(cfg):
    with pytest.raises(OverrideError, match=r"'dataloader\.test\[5\]' is not a dict or list"):
        LazyConfig.apply_overrides(cfg, ["dataloader.test[5].batch_size=1"])
    with pytest.raises(OverrideError, match="is a list; index it with a number"):
        LazyConfig.apply_overrides(cfg, ["dataloader.test.first=1"])


@pytest.mark.parametrize("bad", ["train.train_iter", "=3", "+=3"])
def test_malformed_overrides(cfg, bad):
    with pytest.raises(OverrideError, match="key=value|no key"):
        LazyConfig.apply_overrides(cfg, [bad])


def test_a_single_string_instead_of_a_list_is_rejected(cfg):
    with pytest.raises(OverrideError, match="list of 'key=value' strings"):
        LazyConfig.apply_overrides(cfg, "train.train_iter=3")
