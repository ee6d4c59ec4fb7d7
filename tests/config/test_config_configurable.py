"""@configurable: keyword style, single-config style, from_config, functions, and errors."""
import pytest
from omegaconf import DictConfig

from libai.config import LazyCall, configurable, instantiate


class Plain:
    @configurable
    def __init__(self, width: int, depth: int = 2):
        self.width, self.depth = width, depth


class Mapped:
    @configurable
    def __init__(self, in_features: int, classes: int = 10, bias: bool = True):
        self.in_features, self.classes, self.bias = in_features, classes, bias

    @classmethod
    def from_config(cls, cfg, bias=True):
        return {"in_features": cfg["hidden_size"] * 2, "classes": cfg["num_classes"], "bias": bias}


class MappedChild(Mapped):
    @classmethod
    def from_config(cls, cfg):
        return {"in_features": cfg["hidden_size"], "classes": 1}


@configurable(from_config=lambda cfg: {"size": cfg["hidden"] + 1})
def build_head(size: int, scale: float = 1.0):
    return size * scale


@configurable
def area(width, height):
    return width * height


def test_keyword_and_positional_style_call_init_unchanged():
    assert (Plain(width=3).width, Plain(width=3).depth) == (3, 2)
    assert Plain(5, 6).depth == 6


def test_single_config_style_maps_keys_to_arguments():
    p = Plain({"width": 4, "depth": 1})
    assert (p.width, p.depth) == (4, 1)
    q = Plain(DictConfig({"width": "${depth}", "depth": 9}))  # interpolations resolved
    assert (q.width, q.depth) == (9, 9)


def test_config_style_with_from_config_and_extra_keywords():
    m = Mapped(DictConfig({"hidden_size": 8, "num_classes": 3}))
    assert (m.in_features, m.classes, m.bias) == (16, 3, True)
    m2 = Mapped({"hidden_size": 1, "num_classes": 2}, bias=False, classes=7)
    # bias goes through from_config (it names it); classes overrides what from_config returned
    assert (m2.in_features, m2.classes, m2.bias) == (2, 7, False)


def test_subclass_from_config_is_used():
    child = MappedChild({"hidden_size": 5})
    assert (child.in_features, child.classes, child.bias) == (5, 1, True)
    assert isinstance(child, Mapped)


def test_functions_in_both_styles():
    assert build_head(size=3) == 3
    assert build_head({"hidden": 3}) == 4
    assert build_head({"hidden": 3}, scale=0.5) == 2.0
    assert area({"width": 2, "height": 5}) == 10 and area(2, 3) == 6
    assert area.__name__ == "area"  # functools.wraps keeps the identity


def test_lazycall_and_instantiate_use_keyword_style():
    built = instantiate(LazyCall(Mapped)(in_features=4, classes=2))
    assert (built.in_features, built.classes) == (4, 2)


def test_unknown_config_key_names_it_with_a_suggestion():
    with pytest.raises(TypeError, match=r"Plain: config key\(s\) 'widht' \(did you mean 'width'\?\)"):
        Plain({"widht": 3})


def test_missing_required_argument_is_named():
    with pytest.raises(TypeError, match=r"Plain: the config does not set required argument\(s\) width"):
        Plain({"depth": 3})


def test_extra_positionals_with_a_config_are_rejected():
    with pytest.raises(TypeError, match="pass everything besides the config by keyword"):
        Plain({"width": 1}, 2)


def test_from_config_must_return_a_mapping():
    class Bad:
        @configurable(from_config=lambda cfg: [1])
        def __init__(self, a):
            self.a = a

    with pytest.raises(TypeError, match="from_config must return a dict"):
        Bad({"a": 1})


def test_decorator_arguments_are_checked():
    with pytest.raises(TypeError, match="from_config must be callable"):
        configurable(from_config=3)(lambda a: a)
