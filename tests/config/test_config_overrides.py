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


# Value spellings whose meaning hydra-core's own parser decides (computed below, not copied):
# lists of unquoted paths, nested dicts, inf/nan, escapes, quoting, hex, underscores, empty.
HYDRA_FORMS = [
    "7", "-3", "1e-4", "0.5", ".5", "1.", "1_000", "True", "false", "null", "inf", "-inf", "nan",
    "[1, 2]", "[data/train.tsv]", "[data/a.tsv,data/b.tsv]", "[]", "{a: 1, b: [2]}", "{}",
    "'quoted text'", '"double"', "./output/run 1", "libai.scheduler.WarmupStepLR", "",
    "a\\,b", "'a,b'", "0x10", "\\[1\\]", "${train.seed}", "  spaced ", "[a, [b, c], {d: e}]",
]


def _hydra_value(text):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_override(f"key={text}").value()


def _plain(value):
    from omegaconf import OmegaConf

    return OmegaConf.to_container(value) if isinstance(value, (DictConfig, ListConfig)) else value


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("text", HYDRA_FORMS)
def test_values_are_what_hydras_parser_gives(cfg, text):
    """Every spelling of LiBai's override grammar gives the value hydra-core's parser gives."""
    expected = _hydra_value(text)
    LazyConfig.apply_overrides(cfg, [f"+train.probe={text}"])
    raw = cfg.train._get_node("probe")._value() if isinstance(expected, str) else cfg.train.probe
    assert _same(_plain(raw), expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("(0.9, 0.99)", [0.9, 0.99]),  # Python tuple: hydra refuses it
        ("(1,)", [1]),
        ("{'a': 1, 'b': (2, 3)}", {"a": 1, "b": [2, 3]}),  # quoted keys: hydra refuses them
        ("None", None),  # hydra reads the string 'None'
    ],
)
def test_libai_extras_hydra_does_not_have(cfg, text, expected):
    from hydra.errors import HydraException

    try:
        hydra_reads = _hydra_value(text)
    except HydraException:
        hydra_reads = "refused"
    assert hydra_reads != expected  # otherwise this is not an extra
    LazyConfig.apply_overrides(cfg, [f"+train.probe={text}"])
    assert _plain(cfg.train.probe) == expected


@pytest.mark.parametrize(
    "bad, message",
    [
        ("train.output_dir=[a,b", "does not parse in hydra's override grammar"),
        ("train.output_dir={a: 1", "does not parse"),
        ("train.output_dir='open", "does not parse"),
        ("train.load_weight=a=b", r"quote a string that holds .*'='"),
        ("train.train_iter=1,2", r"sweep syntax .*'train.train_iter=\[1,2\]'"),
        ("train.train_iter=choice(1,2)", "sweep syntax"),
        ("train.amp@pkg.enabled=true", "does not parse|@package"),
    ],
)
def test_malformed_values_are_refused_not_taken_as_strings(cfg, bad, message):
    before = _plain(cfg.train)
    with pytest.raises(OverrideError, match=message):
        LazyConfig.apply_overrides(cfg, [bad])
    assert _plain(cfg.train) == before


def test_a_value_may_not_change_a_keys_kind(cfg):
    cfg.train.paths = ["data/a.tsv"]
    with pytest.raises(OverrideError) as info:
        LazyConfig.apply_overrides(cfg, ["train.paths=data/b.tsv"])
    message = str(info.value)
    assert "'train.paths' holds a list (['data/a.tsv'])" in message
    assert "the new value is a str ('data/b.tsv')" in message
    assert "'train.paths=[data/b.tsv]'" in message
    with pytest.raises(OverrideError, match=r"holds a config node building pkg.Model .*fields: hidden"):
        LazyConfig.apply_overrides(cfg, ["model=3"])
    with pytest.raises(OverrideError, match=r"holds a int \(32\); the new value is a list .*quote it"):
        LazyConfig.apply_overrides(cfg, ["train.train_micro_batch_size=[1,2]"])
    with pytest.raises(OverrideError, match=r"holds a config node .* the new value is a list"):
        LazyConfig.apply_overrides(cfg, ["train.amp=[1]"])
    # null clears anything, a list replaces a list, ++ changes a kind on purpose, and a '???'
    # or None value takes any kind
    LazyConfig.apply_overrides(cfg, ["train.paths=[x,y]", "train.amp=null",
                                     "++train.train_micro_batch_size=[1,2]", "model.hidden=[3]",
                                     "train.global_batch_size={a: 1}"])
    assert _plain(cfg.train.paths) == ["x", "y"] and cfg.train.amp is None
    assert _plain(cfg.train.train_micro_batch_size) == [1, 2]
    assert _plain(cfg.model.hidden) == [3] and _plain(cfg.train.global_batch_size) == {"a": 1}


def test_a_dict_merges_into_a_node_field_by_field(cfg):
    LazyConfig.apply_overrides(cfg, ["train.amp={enabled: true}",
                                     "train.dist={tensor_parallel_size: 2, pipeline_parallel_size: 1}"])
    assert cfg.train.amp.enabled is True
    assert cfg.train.dist.tensor_parallel_size == 2 and "data_parallel_size" in cfg.train.dist
    with pytest.raises(OverrideKeyError, match=r"'train.dist' has no field 'tensor_paralel_size'.*"
                       r"Did you mean train.dist.tensor_parallel_size"):
        LazyConfig.apply_overrides(cfg, ["train.dist={tensor_paralel_size: 2}"])
    with pytest.raises(OverrideError, match="train.amp.enabled' holds a bool"):
        LazyConfig.apply_overrides(cfg, ["train.amp={enabled: [1]}"])


def test_tilde_deletes_a_key(cfg):
    LazyConfig.apply_overrides(cfg, ["~train.seed"])
    assert "seed" not in cfg.train
    with pytest.raises(OverrideKeyError, match="'train.seed' does not exist"):
        LazyConfig.apply_overrides(cfg, ["~train.seed"])
    LazyConfig.apply_overrides(cfg, ["~train.log_period=" + str(cfg.train.log_period)])
    assert "log_period" not in cfg.train
    with pytest.raises(OverrideError, match=r"not 12345, so it is not deleted"):
        LazyConfig.apply_overrides(cfg, ["~train.train_iter=12345"])
    assert "train_iter" in cfg.train


def test_double_plus_sets_or_adds(cfg):
    LazyConfig.apply_overrides(cfg, ["++train.train_iter=9", "++train.brand_new=[a]"])
    assert cfg.train.train_iter == 9 and _plain(cfg.train.brand_new) == ["a"]


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


def test_value_containing_equals_sign_is_quoted(cfg):
    LazyConfig.apply_overrides(cfg, ["train.load_weight='a=b'"])
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
