"""LazyCall nodes and instantiate: recursion, pass-through, target kinds, and error paths."""
import collections
import dataclasses

import pytest
from omegaconf import DictConfig, OmegaConf

from libai.config import InstantiationError, LazyCall, instantiate, is_node

BUILD_ORDER = []


class Point:
    def __init__(self, x, y=0):
        BUILD_ORDER.append(("Point", x, y))
        self.x, self.y = x, y


class Segment:
    def __init__(self, start, end):
        BUILD_ORDER.append(("Segment",))
        self.start, self.end = start, end

    def length_squared(self):
        return (self.end.x - self.start.x) ** 2 + (self.end.y - self.start.y) ** 2


def add(a, b):
    return a + b


class Model:
    def __init__(self, cfg):
        self.cfg = cfg


class Config:
    def __init__(self, hidden_size):
        if hidden_size <= 0:
            raise ValueError(f"hidden_size must be positive, got {hidden_size}")
        self.hidden_size = hidden_size


@dataclasses.dataclass
class Options:
    depth: int = 1
    name: str = "x"


class Pair(collections.namedtuple("_Pair", ["first", "second"])):
    """A named tuple subclass with defaults, like the shape specs models pass around."""

    def __new__(cls, first=None, second=None):
        return super().__new__(cls, first, second)


def make_adder(offset):
    """A factory returning a function: a lazy target."""
    return lambda value: value + offset


def count_nodes(children):
    """Receives its argument unbuilt (with _recursive_=False) and reports what it got."""
    return [(type(child).__name__, is_node(child)) for child in children]


def _dotted(obj):
    return f"{obj.__module__}.{obj.__qualname__}"


def test_lazycall_records_target_and_arguments_without_calling():
    BUILD_ORDER.clear()
    node = LazyCall(Point)(x=1, y=2)
    assert isinstance(node, DictConfig)
    assert node._target_ is Point and node.x == 1 and node.y == 2
    assert list(node.keys()) == ["_target_", "x", "y"]
    assert BUILD_ORDER == []
    assert is_node(node) and not is_node({"x": 1})


def test_lazycall_accepts_function_and_dotted_string_targets():
    assert LazyCall(add)(a=1, b=2)._target_ is add
    assert LazyCall("math.hypot")()._target_ == "math.hypot"


@pytest.mark.parametrize("bad", [3, None, "not a path!", "a..b"])
def test_lazycall_rejects_targets_that_are_not_callables_or_dotted_paths(bad):
    with pytest.raises(TypeError, match="LazyCall target"):
        LazyCall(bad)


def test_lazycall_rejects_target_keyword():
    with pytest.raises(TypeError, match="reserved"):
        LazyCall(Point)(_target_=add)


def test_instantiate_builds_children_before_parents_and_nodes_stay_editable():
    BUILD_ORDER.clear()
    node = LazyCall(Segment)(start=LazyCall(Point)(x=1), end=LazyCall(Point)(x=4, y=5))
    node.end.y = 6  # edited after creation, before building
    seg = instantiate(node)
    assert BUILD_ORDER == [("Point", 1, 0), ("Point", 4, 6), ("Segment",)]
    assert seg.length_squared() == (4 - 1) ** 2 + (6 - 0) ** 2


def test_instantiate_resolves_dotted_string_targets_including_test_module_classes():
    point = instantiate(LazyCall(_dotted(Point))(x=7))
    assert isinstance(point, Point) and (point.x, point.y) == (7, 0)
    assert instantiate(LazyCall("textwrap.dedent")(text="  a\n  b")) == "a\nb"
    half = instantiate(LazyCall("fractions.Fraction")(numerator=3, denominator=6))
    assert (half.numerator, half.denominator) == (1, 2)
    assert instantiate(LazyCall(add)(a=[1], b=[2])) == [1, 2]


def test_instantiate_passes_plain_containers_through_with_nodes_built():
    cfg = {
        "plain": 3,
        "items": [LazyCall(add)(a=1, b=2), {"inner": LazyCall(add)(a="x", b="y")}, "s"],
        "pair": (LazyCall(add)(a=1, b=1), 5),
    }
    out = instantiate(cfg)
    assert out == {"plain": 3, "items": [3, {"inner": "xy"}, "s"], "pair": (2, 5)}
    dc = OmegaConf.create({"a": {"b": [1, {"c": 2}]}})
    built = instantiate(dc)
    assert built == {"a": {"b": [1, {"c": 2}]}} and type(built) is dict and type(built["a"]["b"]) is list


def test_instantiate_resolves_interpolations():
    cfg = DictConfig({"size": 4, "p": {"_target_": _dotted(Point), "x": "${size}"}})
    assert instantiate(cfg.p).x == 4


def test_nested_failure_names_key_path_target_and_chains_cause():
    root = DictConfig(
        {"model": LazyCall(Model)(cfg=LazyCall(Config)(hidden_size=-1))}, flags={"allow_objects": True}
    )
    with pytest.raises(InstantiationError) as info:
        instantiate(root.model)
    message = str(info.value)
    assert "'model.cfg'" in message and _dotted(Config) in message
    assert "hidden_size must be positive, got -1" in message
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.path == "model.cfg"


def test_failure_inside_a_list_names_the_index():
    root = DictConfig(
        {"dataloader": {"train": {"dataset": [LazyCall(Config)(hidden_size=h) for h in (2, 0)]}}},
        flags={"allow_objects": True},
    )
    with pytest.raises(InstantiationError, match=r"'dataloader\.train\.dataset\[1\]'"):
        instantiate(root)
    with pytest.raises(InstantiationError, match=r"'dataloader\.train\.dataset\[1\]'"):
        instantiate(root.dataloader.train)


def test_wrong_argument_name_is_pointed_at_with_a_suggestion():
    root = DictConfig({"model": {"cfg": LazyCall(Config)(hiden_size=3)}}, flags={"allow_objects": True})
    with pytest.raises(InstantiationError) as info:
        instantiate(root)
    message = str(info.value)
    assert "'model.cfg.hiden_size' is not an argument" in message
    assert "did you mean 'model.cfg.hidden_size'" in message
    assert "required argument(s) not set: model.cfg.hidden_size" in message
    assert isinstance(info.value.__cause__, TypeError)


def test_unknown_target_string_names_the_string_and_the_path():
    root = DictConfig({"optim": {"_target_": "oneflow_typo.optim.AdamW", "lr": 1}})
    with pytest.raises(InstantiationError) as info:
        instantiate(root)
    message = str(info.value)
    assert "'oneflow_typo.optim.AdamW'" in message and "'optim'" in message
    missing_attr = DictConfig({"x": {"y": {"_target_": "math.no_such_function"}}})
    with pytest.raises(InstantiationError, match=r"'math\.no_such_function' of 'x\.y'.*no attribute"):
        instantiate(missing_attr)


def test_non_callable_target_is_an_error():
    with pytest.raises(InstantiationError, match="cannot be called"):
        instantiate(DictConfig({"_target_": 3}))


def test_missing_value_is_reported_with_its_path():
    root = DictConfig({"model": {"_target_": _dotted(Point), "x": "???"}})
    with pytest.raises(InstantiationError, match=r"'model\.x'.*model\.x=\.\.\."):
        instantiate(root.model)


def test_positional_only_target_gets_an_explanation():
    with pytest.raises(InstantiationError, match="positional-only argument.*a, b") as info:
        instantiate(LazyCall("operator.add")(a=2, b=3))
    assert isinstance(info.value.__cause__, TypeError)


def test_dict_and_dataclass_targets_are_stored_by_import_path_and_still_build():
    # omegaconf would expand a dataclass into its fields and rejects ``dict`` as a value
    node = LazyCall(Options)(depth=3)
    assert node._target_ == _dotted(Options)
    assert instantiate(node) == Options(depth=3, name="x")
    assert LazyCall(dict)(a=1)._target_ == "builtins.dict"
    assert instantiate(LazyCall(dict)(a=1, b=LazyCall(add)(a=1, b=1))) == {"a": 1, "b": 2}


def test_recursive_false_hands_the_arguments_over_unbuilt():
    node = LazyCall(count_nodes)(children=[LazyCall(Point)(x=1), 5])
    assert instantiate(node, _recursive_=False) == [("DictConfig", True), ("int", False)]
    assert instantiate(node) == [("Point", False), ("int", False)]
    # the flag can also live in the node, and applies to that node only
    outer = LazyCall(Segment)(start=LazyCall(Point)(x=0), end=LazyCall(count_nodes)(
        children=[LazyCall(Point)(x=2)], _recursive_=False))
    built = instantiate(outer)
    assert isinstance(built.start, Point) and built.end == [("DictConfig", True)]
    with pytest.raises(TypeError, match=r"instantiate\(_recursive_=...\) must be True or False, got 'no'"):
        instantiate(node, _recursive_="no")


def test_keyword_arguments_replace_the_node_arguments_for_one_call():
    node = LazyCall(Point)(x=1, y=2)
    built = instantiate(node, y=7)
    assert (built.x, built.y) == (1, 7) and node.y == 2
    with pytest.raises(TypeError, match="replaces arguments of a node"):
        instantiate({"a": 1}, y=3)


def test_a_node_as_target_is_built_first_then_called():
    node = LazyCall(LazyCall(make_adder)(offset=10))(value=5)
    assert instantiate(node) == 15
    node._target_.offset = 1  # the inner node stays editable
    assert instantiate(node) == 6
    with pytest.raises(TypeError, match="a dict without '_target_'"):
        LazyCall({"offset": 1})


def test_named_tuples_keep_their_type_through_instantiate_and_yaml(tmp_path):
    node = LazyCall(Segment)(start=Pair(first=LazyCall(Point)(x=3), second=4), end=(1, 2))
    built = instantiate(node)
    assert isinstance(built.start, Pair) and isinstance(built.start.first, Point)
    assert built.start.second == 4 and built.end == [1, 2]  # omegaconf stores a plain tuple as a list
    plain = LazyCall(Model)(cfg=Pair(first=1, second=2))
    path = tmp_path / "pair.yaml"
    OmegaConf.save(plain, str(path))
    import yaml

    reloaded = yaml.unsafe_load(path.read_text())
    assert instantiate(reloaded).cfg == Pair(1, 2) and type(instantiate(reloaded).cfg) is Pair
