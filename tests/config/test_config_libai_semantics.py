"""What instantiate hands to a target, as LiBai hands it: nested config mappings arrive as
attribute-accessible DictConfig objects holding the built values; ``cfg=`` by keyword."""
import textwrap

import oneflow as flow
import pytest
from omegaconf import DictConfig, ListConfig, OmegaConf

from libai.config import LazyCall, LazyConfig, configurable, instantiate


class Keep:
    """Records what it was given."""

    def __init__(self, **given):
        self.given = given


def test_nested_mapping_arrives_as_dictconfig_with_attribute_access():
    node = LazyCall(Keep)(cfg=dict(vocab_size=32, inner=dict(heads=4)), sizes=[1, 2])
    got = instantiate(node).given
    assert isinstance(got["cfg"], DictConfig)
    assert got["cfg"].vocab_size == 32 and got["cfg"]["vocab_size"] == 32
    assert got["cfg"].inner.heads == 4 and got["cfg"].get("missing", 5) == 5
    assert OmegaConf.to_container(got["cfg"]) == {"vocab_size": 32, "inner": {"heads": 4}}
    assert got["sizes"] == [1, 2] and isinstance(got["sizes"], list)


def test_built_objects_inside_a_mapping_stay_the_same_objects():
    node = LazyCall(Keep)(cfg=dict(loss=LazyCall(flow.nn.CrossEntropyLoss)(), table=[LazyCall(Keep)(a=1)]))
    cfg = instantiate(node).given["cfg"]
    assert isinstance(cfg.loss, flow.nn.CrossEntropyLoss)
    assert cfg.loss is cfg["loss"]  # held as is, not copied or converted
    assert isinstance(cfg.table[0], Keep) and cfg.table[0].given == {"a": 1}


def test_interpolations_are_resolved_and_recursive_false_hands_the_node_over():
    cfg = OmegaConf.create({"hidden": 8, "model": LazyCall(Keep)(cfg=dict(width="${hidden}"))},
                           flags={"allow_objects": True})
    assert instantiate(cfg.model).given["cfg"].width == 8
    lazy = LazyCall(Keep)(child=LazyCall(Keep)(a=1), _recursive_=False)
    child = instantiate(lazy).given["child"]
    assert isinstance(child, DictConfig) and child._target_ is Keep  # unbuilt, for the target
    assert instantiate(child).given == {"a": 1}


def test_arguments_given_to_instantiate_are_handed_over_unchanged():
    groups = [{"params": [flow.nn.Parameter(flow.zeros(2))], "lr": 0.1}]
    got = instantiate(LazyCall(Keep)(lr=1.0), params=groups).given
    assert got["params"] is groups and type(got["params"][0]) is dict


def test_mapping_omegaconf_cannot_hold_unchanged_stays_a_dict():
    from collections import namedtuple

    Pair = namedtuple("Pair", "a b")
    got = instantiate(LazyCall(Keep)(cfg={"pair": LazyCall(Pair)(a=1, b=2)})).given["cfg"]
    assert type(got) is dict and got["pair"] == Pair(1, 2)


class Head:
    @configurable
    def __init__(self, width: int, classes: int = 2):
        self.width, self.classes = width, classes

    @classmethod
    def from_config(cls, cfg):
        return {"width": cfg.hidden_size, "classes": cfg.num_classes}


class OwnCfg:
    @configurable
    def __init__(self, cfg=None, width: int = 1):
        self.cfg, self.width = cfg, width


def test_configurable_takes_the_config_by_keyword():
    cfg = DictConfig({"hidden_size": 16, "num_classes": 5})
    head = Head(cfg=cfg)
    assert (head.width, head.classes) == (16, 5)
    assert Head(cfg=cfg, classes=7).classes == 7  # extra keywords still override
    built = instantiate(LazyCall(Head)(cfg=dict(hidden_size=4, num_classes=3)))
    assert (built.width, built.classes) == (4, 3)


def test_cfg_keyword_of_a_target_that_has_its_own_cfg_argument_is_passed_through():
    cfg = DictConfig({"width": 9})
    own = OwnCfg(cfg=cfg)
    assert own.cfg is cfg and own.width == 1


class OwnCfgWithFromConfig:
    """The shape of LiBai's Llama-family projects: ``__init__`` takes ``cfg`` and its other
    arguments, and ``from_config`` returns both."""

    @configurable
    def __init__(self, hidden: int, cfg=None):
        self.hidden, self.cfg = hidden, cfg

    @classmethod
    def from_config(cls, cfg):
        return {"hidden": cfg.hidden_size * 2, "cfg": cfg}


def test_dictconfig_by_keyword_goes_through_from_config_even_when_init_takes_cfg():
    cfg = DictConfig({"hidden_size": 8})
    built = OwnCfgWithFromConfig(cfg=cfg)
    assert built.hidden == 16 and built.cfg is cfg
    # what a LiBai config hands over through instantiate: a nested node becomes a DictConfig
    made = instantiate(LazyCall(OwnCfgWithFromConfig)(cfg=dict(hidden_size=3)))
    assert made.hidden == 6 and made.cfg.hidden_size == 3
    # a plain dict is not LiBai's config object: passed on as the argument it names
    assert OwnCfgWithFromConfig(hidden=1, cfg={"x": 1}).cfg == {"x": 1}


def test_function_with_from_config_takes_cfg_by_keyword():
    @configurable(from_config=lambda cfg: {"size": cfg.hidden + 1})
    def make(size: int):
        return size

    assert make(cfg=DictConfig({"hidden": 3})) == 4 and make(size=2) == 2


def test_a_libai_style_config_file_builds_its_model(tmp_path):
    (tmp_path / "net.py").write_text(textwrap.dedent(f"""
        from omegaconf import DictConfig
        from libai.config import LazyCall
        from {__name__} import Keep
        cfg = DictConfig(dict(hidden_size=8, layers=[2, 2]))
        model = LazyCall(Keep)(cfg=cfg)
        model.cfg.hidden_size = 12
    """))
    cfg = LazyConfig.load(str(tmp_path / "net.py"))
    got = instantiate(cfg.model).given["cfg"]
    assert isinstance(got, DictConfig) and got.hidden_size == 12
    assert isinstance(got.layers, ListConfig) and list(got.layers) == [2, 2]
